package main

import (
	"encoding/json"
	"testing"
)

// TestVersionBeforeOrdering: the "before" database of the ordering ingest
// comparison stops at the migration just before the one that creates
// webhooks.ordering, which exists.
func TestVersionBeforeOrdering(t *testing.T) {
	t.Parallel()
	v, err := versionBeforeOrdering()
	if err != nil {
		t.Fatal(err)
	}
	if v < 100 {
		t.Fatalf("version before ordering = %d, want the migration just before webhooks.ordering", v)
	}
}

// TestOrderingPayload: the scenario's events carry the key and order value
// at the paths it gives set_ordering.
func TestOrderingPayload(t *testing.T) {
	t.Parallel()
	var p struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
		Data    struct {
			Object struct {
				Customer string `json:"customer"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(orderingPayload("evt_x", 42, 7)), &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != "evt_x" || p.Data.Object.Customer != "cus_00042" || p.Created != 1_760_000_007 {
		t.Fatalf("payload %+v", p)
	}
	if orderingKeyPath != "$.data.object.customer" || orderingOrderPath != "$.created" {
		t.Fatal("the paths no longer match the payload")
	}
}
