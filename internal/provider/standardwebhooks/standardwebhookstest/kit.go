// Package standardwebhookstest is the standardwebhooks kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package standardwebhookstest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the standardwebhooks kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "standardwebhooks",
		Secrets: [2]string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-old-key")), "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-new-key"))},
		Body: func(key string) string {
			// The key is the webhook-id header.
			return fmt.Sprintf(`{"type": "user.created", "data": {"id": 1, "note": %q}}`, key)
		},
		Sign: func(secret, body, key string, at time.Time) http.Header {
			return testsign.StandardWebhooks(secret, key, body, at)
		},
		EventType: "user.created",
	}
}
