// Package shopifytest is the shopify kind's test kit: secrets, a sample
// delivery and its signer, for the tests every kind shares.
package shopifytest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/testsign"
)

// Kit returns the shopify kind's test kit.
func Kit() providertest.Kit {
	return providertest.Kit{
		Kind:    "shopify",
		Secrets: [2]string{"shpss_secret_old_0123", "shpss_secret_new_0123"},
		Body: func(key string) string {
			return fmt.Sprintf(`{"id": 1, "total": "10.00", "note": %q}`, key)
		},
		Sign: func(secret, body, key string, _ time.Time) http.Header {
			h := testsign.Shopify(secret, body)
			h.Set("X-Shopify-Event-Id", key)
			h.Set("X-Shopify-Topic", "orders/create")
			return h
		},
		EventType: "orders/create",
	}
}
