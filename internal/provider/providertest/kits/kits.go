// Package kits lists the test kit of every provider kind
// (internal/provider/<kind>/<kind>test), sorted by kind, for the tests every
// kind shares. tests.TestEveryKindIsComplete fails when a kind of the list
// of kinds has no kit here, or a kit no kind.
package kits

import (
	"github.com/pginbox/pginbox/internal/provider/github/githubtest"
	"github.com/pginbox/pginbox/internal/provider/linear/lineartest"
	"github.com/pginbox/pginbox/internal/provider/paddle/paddletest"
	"github.com/pginbox/pginbox/internal/provider/providertest"
	"github.com/pginbox/pginbox/internal/provider/shopify/shopifytest"
	"github.com/pginbox/pginbox/internal/provider/slack/slacktest"
	"github.com/pginbox/pginbox/internal/provider/square/squaretest"
	"github.com/pginbox/pginbox/internal/provider/standardwebhooks/standardwebhookstest"
	"github.com/pginbox/pginbox/internal/provider/stripe/stripetest"
	"github.com/pginbox/pginbox/internal/provider/sume/sumetest"
)

// All returns the kit of every kind, sorted by kind.
func All() []providertest.Kit {
	return []providertest.Kit{
		githubtest.Kit(),
		lineartest.Kit(),
		paddletest.Kit(),
		shopifytest.Kit(),
		slacktest.Kit(),
		squaretest.Kit(),
		standardwebhookstest.Kit(),
		stripetest.Kit(),
		sumetest.Kit(),
	}
}

// For returns the kit of kind; false when it has none.
func For(kind string) (providertest.Kit, bool) {
	for _, k := range All() {
		if k.Kind == kind {
			return k, true
		}
	}
	return providertest.Kit{}, false
}
