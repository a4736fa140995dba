package tests

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/provider"
	"github.com/pginbox/pginbox/runner/verify"
)

// TestProviderKindsMatchSQL keeps the provider kinds equal where they are
// written: the Go list (internal/provider, which runner/verify.New and the
// backfill configuration consult), the CHECK on
// webhooks.provider_secrets.kind, and the kinds webhooks.set_provider
// accepts. A kind added to (or removed from) one of them without the others
// fails here.
func TestProviderKindsMatchSQL(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	goKinds := provider.Names()
	if got := verify.Kinds(); !slices.Equal(got, goKinds) {
		t.Fatalf("verify.Kinds() = %q, the list of kinds %q", got, goKinds)
	}

	// The CHECK on the kind column, as Postgres prints it back:
	// CHECK ((kind = ANY (ARRAY['github'::text, ...]))).
	rows, err := pool.Query(ctx, `
		SELECT pg_catalog.pg_get_constraintdef(c.oid)
		  FROM pg_catalog.pg_constraint c
		  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
		 WHERE c.conrelid = 'webhooks.provider_secrets'::regclass AND c.contype = 'c' AND a.attname = 'kind'`)
	if err != nil {
		t.Fatal(err)
	}
	var defs []string
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 {
		t.Fatalf("%d CHECK constraints on webhooks.provider_secrets.kind, want 1: %q", len(defs), defs)
	}
	if got := quotedKinds(defs[0]); !slices.Equal(got, goKinds) {
		t.Errorf("the CHECK on webhooks.provider_secrets.kind allows %q, the Go list is %q (%s)", got, goKinds, defs[0])
	}

	// set_provider takes every kind of the Go list (and stores it past the CHECK) ...
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // valid for every kind
	for _, kind := range goKinds {
		var url *string // only the kinds that sign the URL they are posted to take one
		if verify.SignsURL(kind) {
			u := "https://hooks.example.com/webhooks/kinds-" + kind
			url = &u
		}
		if _, err := pool.Exec(ctx, `SELECT webhooks.set_provider($1, $2, ARRAY[$3], $4)`, "kinds-"+kind, kind, secret, url); err != nil {
			t.Errorf("set_provider refuses kind %s of the Go list: %v", kind, err)
		}
		u := ""
		if url != nil {
			u = *url
		}
		if _, err := verify.NewWithURL(kind, []string{secret}, u); err != nil {
			t.Errorf("verify.NewWithURL(%s): %v", kind, err)
		}
	}
	if n := queryInt(t, pool, `SELECT count(DISTINCT kind) FROM webhooks.provider_secrets`); int(n) != len(goKinds) {
		t.Errorf("%d kinds stored, want %d", n, len(goKinds))
	}
	// ... and refuses any other, naming exactly the Go list as supported.
	for _, kind := range []string{"paypal", "Sume", "", "sume "} {
		_, err := pool.Exec(ctx, `SELECT webhooks.set_provider('kinds-unknown', $1, ARRAY[$2])`, kind, secret)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22023" || !strings.Contains(pgErr.Message, "unknown provider kind") {
			t.Fatalf("set_provider(kind %q): %v, want 22023 unknown provider kind", kind, err)
		}
		_, supported, ok := strings.Cut(pgErr.Message, "(supported: ")
		if got := strings.Split(strings.TrimSuffix(supported, ")"), ", "); !ok || !slices.Equal(got, goKinds) {
			t.Fatalf("set_provider supports %q, the Go list is %q (%s)", got, goKinds, pgErr.Message)
		}
		if _, err := verify.New(kind, []string{secret}); err == nil {
			t.Errorf("verify.New accepts kind %q that set_provider refuses", kind)
		}
	}
}

// quotedKinds returns the sorted string literals of a constraint definition.
func quotedKinds(def string) []string {
	var kinds []string
	for _, m := range regexp.MustCompile(`'((?:[^']|'')*)'`).FindAllStringSubmatch(def, -1) {
		kinds = append(kinds, strings.ReplaceAll(m[1], "''", "'"))
	}
	slices.Sort(kinds)
	return kinds
}
