// Package stripetest is the stripe kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package stripetest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the stripe kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "stripe",
		Secrets: [2]string{"whsec_stripe_old_0123", "whsec_stripe_new_0123"},
		Body: func(key string) string {
			return fmt.Sprintf(`{"id": %q, "type": "invoice.paid", "object": "event"}`, key)
		},
		Sign: func(secret, body, _ string, at time.Time) http.Header {
			return testsign.Stripe(secret, body, at)
		},
		EventType: "invoice.paid",
	}
}
