// Package githubtest is the github kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package githubtest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the github kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "github",
		Secrets: [2]string{"gh-secret-old-0123", "gh-secret-new-0123"},
		Body: func(key string) string {
			// Real deliveries differ in their bodies; an identical body under a
			// fresh key is a replay (a duplicate) for kinds with unsigned keys.
			return fmt.Sprintf(`{"action": "opened", "issue": {"number": 1, "title": %q}}`, key)
		},
		Sign: func(secret, body, key string, _ time.Time) http.Header {
			h := testsign.GitHub(secret, body)
			h.Set("X-Github-Delivery", key)
			h.Set("X-Github-Event", "issues")
			return h
		},
		EventType: "issues.opened",
	}
}
