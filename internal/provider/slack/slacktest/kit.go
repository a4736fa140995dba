// Package slacktest is the slack kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package slacktest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the slack kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "slack",
		Secrets: [2]string{"slack-signing-old-0123", "slack-signing-new-0123"},
		Body: func(key string) string {
			return fmt.Sprintf(`{"type": "event_callback", "event_id": %q, "event": {"type": "app_mention", "text": "hi"}}`, key)
		},
		Sign: func(secret, body, _ string, at time.Time) http.Header {
			return testsign.Slack(secret, body, at)
		},
		EventType: "app_mention",
	}
}
