package provider

import (
	"slices"
	"testing"
)

// TestKindsSorted: the list is sorted by name, without duplicates, and
// every kind has a verifier.
func TestKindsSorted(t *testing.T) {
	t.Parallel()
	names := Names()
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Fatalf("kinds %q are not sorted and unique", names)
	}
	for _, k := range Kinds() {
		if k.NewVerifier == nil {
			t.Errorf("kind %s has no verifier", k.Name)
		}
		if got, ok := Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %v, %v", k.Name, got.Name, ok)
		}
	}
	for _, name := range []string{"", "Sume", "paypal"} {
		if _, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found a kind", name)
		}
	}
}

// TestKindsBackfill: which kinds backfill can read, and how.
func TestKindsBackfill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind              string
		statusAPI, evtLog bool
	}{
		{"github", false, true},
		{"linear", false, false},
		{"shopify", false, false},
		{"slack", false, false},
		{"square", false, false},
		{"standardwebhooks", false, false},
		{"stripe", false, true},
		{"sume", true, false},
	}
	for _, tt := range tests {
		k, ok := Lookup(tt.kind)
		if !ok {
			t.Fatalf("no kind %s", tt.kind)
		}
		if (k.NewStatusAPI != nil) != tt.statusAPI || (k.NewEventLog != nil) != tt.evtLog || k.HasBackfill() != (tt.statusAPI || tt.evtLog) {
			t.Errorf("kind %s: status API %v, event log %v; want %v, %v", tt.kind, k.NewStatusAPI != nil, k.NewEventLog != nil, tt.statusAPI, tt.evtLog)
		}
	}
}
