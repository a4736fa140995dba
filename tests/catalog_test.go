package tests

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestEveryFunctionHasAComment: every function carries a COMMENT ON
// FUNCTION (psql's \df+ shows it to whoever looks a function up).
func TestEveryFunctionHasAComment(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rows, err := pool.Query(context.Background(), `
		SELECT p.oid::regprocedure::text, coalesce(obj_description(p.oid, 'pg_proc'), '')
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'webhooks'`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct{ Sig, Comment string }
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) < 8 {
		t.Fatalf("only %d functions in schema webhooks: the test is not looking at the right schema", len(fns))
	}
	for _, f := range fns {
		if len(f.Comment) < 20 {
			t.Errorf("%s has no useful COMMENT ON FUNCTION (%q)", f.Sig, f.Comment)
		}
	}
}

// TestPublicSignatures: the functions and tables of the SQL API
// (docs/reference.md) exist with the argument types it documents.
func TestPublicSignatures(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	// EXPLAIN resolves each call shape (defaults included) without running
	// it: a missing, misspelled or ambiguous overload fails here.
	for _, call := range []string{
		"webhooks.ingest_webhook(NULL::text, NULL::text, NULL::text, NULL::jsonb)",
		"webhooks.ingest_webhook(NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::text)",
		"webhooks.ingest_webhook(provider => 'p', external_id => 'e', event_type => 't', payload => '{}', source => 'backfill')",
		"webhooks.claim(NULL::text)",
		"webhooks.claim(NULL::text, NULL::integer, NULL::interval)",
		"webhooks.claim(worker => 'w', max_events => 1, lease => '1 minute')",
		"webhooks.complete(NULL::bigint, NULL::text, NULL::integer)",
		"webhooks.complete(event_id => 1, worker => 'w', attempt => 1)",
		"webhooks.fail(NULL::bigint, NULL::text, NULL::integer, NULL::text)",
		"webhooks.fail(event_id => 1, worker => 'w', attempt => 1, error => 'x')",
		"webhooks.heartbeat(NULL::bigint, NULL::text, NULL::integer, NULL::interval)",
		"webhooks.replay(NULL::bigint, NULL::text)",
		"webhooks.replay(event_id => 1, reason => 'x')",
		"webhooks.prune(NULL::interval, NULL::interval)",
		"webhooks.prune(keep_payload => '1 day', keep_keys => '2 days')",
		"webhooks.set_check_range(NULL::text, NULL::numeric, NULL::numeric)",
		"webhooks.set_check_mode(NULL::text, NULL::text)",
		"webhooks.set_check_mode(name => 'c', mode => 'learned', k => 3, floor_abs => 10, floor_ratio => 0.5, min_weeks => 3)",
	} {
		if _, err := pool.Exec(context.Background(), "EXPLAIN SELECT "+call); err != nil {
			t.Errorf("%s: %v", call, err)
		}
	}
	for _, col := range []string{"id", "provider", "external_id", "event_type", "status", "payload", "source",
		"received_at", "processed_at", "attempts", "max_attempts", "run_after", "locked_by", "locked_until", "last_error"} {
		if n := queryInt(t, pool, `SELECT count(*) FROM information_schema.columns
			WHERE table_schema = 'webhooks' AND table_name = 'events' AND column_name = $1`, col); n != 1 {
			t.Errorf("webhooks.events.%s missing", col)
		}
	}
	for _, table := range []string{"expectations", "tombstones", "checks", "reconcile_runs"} {
		if n := queryInt(t, pool, `SELECT count(*) FROM pg_tables WHERE schemaname = 'webhooks' AND tablename = $1`, table); n != 1 {
			t.Errorf("webhooks.%s missing", table)
		}
	}
	// webhooks.events is a view over the queue and history since storage v2.
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_views WHERE schemaname = 'webhooks' AND viewname = 'events'`); n != 1 {
		t.Errorf("webhooks.events missing")
	}
}

// TestNothingExecutableByPublic: every function in schema webhooks has had
// PostgreSQL's default EXECUTE-to-PUBLIC revoked (a migration that creates a
// function must revoke it in the same file).
func TestNothingExecutableByPublic(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rows, err := pool.Query(context.Background(), `
		SELECT p.oid::regprocedure::text
		FROM pg_proc p
		WHERE p.pronamespace = 'webhooks'::regnamespace
		  AND (p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))`)
	if err != nil {
		t.Fatal(err)
	}
	open, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(open) > 0 {
		t.Fatalf("functions executable by PUBLIC (add REVOKE EXECUTE ... FROM PUBLIC to their migration): %v", open)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_proc WHERE pronamespace = 'webhooks'::regnamespace`); n < 30 {
		t.Fatalf("only %d functions: not looking at the right schema", n)
	}
}

// TestNoFunctionCallExpandedWithStar: no function in schema webhooks selects
// (f(...)).* — PostgreSQL expands that into one call of f per column of its
// result, so a 21-column row costs 21 calls. _lock_pending did so with
// jsonb_populate_record, and it was half the server's CPU per processed
// event. Put the call in FROM (LATERAL) or name the columns instead.
func TestNoFunctionCallExpandedWithStar(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rows, err := pool.Query(context.Background(), `
		SELECT p.oid::regprocedure::text
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'webhooks' AND p.prosrc ~ '\)\s*\)\s*\.\s*\*'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range bad {
		t.Errorf("%s expands a function call with .* (one call per result column)", f)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'webhooks' AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')`); n < 8 {
		t.Fatalf("only %d plpgsql functions in schema webhooks: the test is not looking at the right schema", n)
	}
}

// TestParallelSafeFunctionsStartNoSubtransaction: a function labelled
// PARALLEL SAFE may run in a parallel worker, where a plpgsql EXCEPTION
// block fails with "cannot start subtransactions during a parallel
// operation"; nor may it call a function of the schema that is not
// PARALLEL SAFE itself.
func TestParallelSafeFunctionsStartNoSubtransaction(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rows, err := pool.Query(context.Background(), `
		SELECT p.oid::regprocedure::text, p.proname, p.proparallel = 's', p.prosrc
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'webhooks'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct {
		Sig, Name string
		Safe      bool
		Src       string
	}
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	exceptionBlock := regexp.MustCompile(`(?i)\bEXCEPTION\s+WHEN\b`)
	safe := 0
	for _, f := range fns {
		if !f.Safe {
			continue
		}
		safe++
		code := withoutStringLiterals(f.Src) // a HINT may name a function
		if exceptionBlock.MatchString(code) {
			t.Errorf("%s is PARALLEL SAFE and has an EXCEPTION block: label it PARALLEL UNSAFE", f.Sig)
		}
		for _, g := range fns {
			if !g.Safe && strings.Contains(code, "webhooks."+g.Name+"(") {
				t.Errorf("%s is PARALLEL SAFE and calls webhooks.%s, which is not: label it PARALLEL UNSAFE", f.Sig, g.Name)
			}
		}
	}
	if safe < 5 {
		t.Fatalf("only %d PARALLEL SAFE functions in schema webhooks: the test is not looking at the right schema", safe)
	}
}

// withoutStringLiterals drops the '…' literals (” inside one is a quote)
// and the -- comments of SQL source, keeping the code.
func withoutStringLiterals(src string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case in && c == '\'' && i+1 < len(src) && src[i+1] == '\'':
			i++
		case c == '\'':
			in = !in
			b.WriteByte(' ')
		case !in && c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}
