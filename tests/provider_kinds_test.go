package tests

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pginbox/pginbox/internal/provider"
	"github.com/pginbox/pginbox/internal/testsign"
	"github.com/pginbox/pginbox/runner/verify"
)

// TestProviderKindsMatchSQL keeps the provider kinds equal where they are
// written: the Go list (internal/provider, which runner/verify.New and the
// backfill configuration consult), the rows of webhooks.provider_kinds (the
// foreign key of webhooks.provider_secrets.kind), and the kinds
// webhooks.set_provider accepts. A kind added to (or removed from) one of them without the others
// fails here.
func TestProviderKindsMatchSQL(t *testing.T) {
	t.Parallel()
	pool := PoolFor(t, NewConfig(t).URL(), 2)
	ctx := context.Background()
	goKinds := provider.Names()
	if got := verify.Kinds(); !slices.Equal(got, goKinds) {
		t.Fatalf("verify.Kinds() = %q, the list of kinds %q", got, goKinds)
	}

	// The rows of webhooks.provider_kinds, each with whether its signature
	// covers the notification URL, and the foreign key that makes
	// provider_secrets.kind one of them (no CHECK spells the list any more).
	rows, err := pool.Query(ctx, `SELECT kind, signs_url FROM webhooks.provider_kinds ORDER BY kind COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	var sqlKinds []string
	for rows.Next() {
		var kind string
		var signsURL bool
		if err := rows.Scan(&kind, &signsURL); err != nil {
			t.Fatal(err)
		}
		sqlKinds = append(sqlKinds, kind)
		if signsURL != verify.SignsURL(kind) {
			t.Errorf("webhooks.provider_kinds says kind %s signs_url %v, verify.SignsURL says %v", kind, signsURL, verify.SignsURL(kind))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sqlKinds, goKinds) {
		t.Errorf("webhooks.provider_kinds holds %q, the Go list is %q", sqlKinds, goKinds)
	}
	var fkey string
	if err := pool.QueryRow(ctx, `
		SELECT pg_catalog.pg_get_constraintdef(c.oid)
		  FROM pg_catalog.pg_constraint c
		  JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
		 WHERE c.conrelid = 'webhooks.provider_secrets'::regclass AND c.contype IN ('c', 'f') AND a.attname = 'kind'`).Scan(&fkey); err != nil {
		t.Fatalf("the one constraint on webhooks.provider_secrets.kind: %v", err)
	}
	if fkey != "FOREIGN KEY (kind) REFERENCES webhooks.provider_kinds(kind)" {
		t.Errorf("the constraint on webhooks.provider_secrets.kind is %q, want the foreign key to webhooks.provider_kinds", fkey)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhooks.provider_secrets (provider, kind, secret) VALUES ('kinds-fk', 'paypal', 'x')`); err == nil {
		t.Error("webhooks.provider_secrets takes kind paypal, which webhooks.provider_kinds does not list")
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

// TestProviderKindsUpgradeKeepsSecrets: providers configured on the released
// 0.1.0 schema (migration 67, with its CHECK on the kind) keep their secrets
// through the migration that replaces the CHECK with the foreign key to
// webhooks.provider_kinds, and still verify deliveries after it.
func TestProviderKindsUpgradeKeepsSecrets(t *testing.T) {
	t.Parallel()
	db, _ := emptyDB(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA webhooks`); err != nil {
		t.Fatal(err)
	}
	p := migrationProvider(t, db, nil)
	if _, err := p.UpTo(ctx, 67); err != nil {
		t.Fatalf("up to 67: %v", err)
	}
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	for _, pk := range [][2]string{{"pay", "stripe"}, {"gh", "github"}, {"sw", "standardwebhooks"}} {
		if _, err := db.ExecContext(ctx, `SELECT webhooks.set_provider($1, $2, ARRAY[$3])`, pk[0], pk[1], secret); err != nil {
			t.Fatalf("0.1.0 set_provider(%s): %v", pk[1], err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	var kinds string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(provider || '=' || kind, ',' ORDER BY provider) FROM webhooks.provider_secrets`).Scan(&kinds); err != nil {
		t.Fatal(err)
	}
	if kinds != "gh=github,pay=stripe,sw=standardwebhooks" {
		t.Fatalf("after the upgrade provider_secrets holds %s", kinds)
	}
	body := `{"id":"evt_up_1","type":"invoice.paid"}`
	var outcome string
	if err := db.QueryRowContext(ctx, `SELECT outcome FROM webhooks.ingest_signed('pay', $1::jsonb, convert_to($2, 'UTF8'))`,
		testsign.JSON(testsign.Stripe(secret, body, time.Now())), body).Scan(&outcome); err != nil || outcome != "created" {
		t.Fatalf("ingest_signed after the upgrade: %q, %v", outcome, err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE webhooks.provider_secrets SET kind = 'paypal' WHERE provider = 'pay'`); err == nil {
		t.Error("after the upgrade provider_secrets takes kind paypal")
	}
}
