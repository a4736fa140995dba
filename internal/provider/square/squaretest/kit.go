// Package squaretest is the square kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package squaretest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// URL is the notification URL the kit's deliveries are signed for: the URL
// registered at Square, which it signs before the body.
const URL = "https://hooks.example.com/webhooks/square"

// Kit returns the square kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "square",
		Secrets: [2]string{"sq-signature-key-old-0123", "sq-signature-key-new-0123"},
		URL:     URL,
		Body: func(key string) string {
			return fmt.Sprintf(`{"type": "payment.updated", "event_id": %q, "data": {"type": "payment"}}`, key)
		},
		Sign: func(secret, body, _ string, _ time.Time) http.Header {
			return testsign.Square(secret, URL, body)
		},
		EventType: "payment.updated",
	}
}
