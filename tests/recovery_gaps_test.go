package tests

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// gapRow is one row of webhooks.find_gaps().
type gapRow struct {
	Provider, ExternalID string
	StatusURL            *string
}

func findGaps(t *testing.T, pool *pgxpool.Pool, provider *string) []gapRow {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT provider, external_id, status_url FROM webhooks.find_gaps($1)`, provider)
	if err != nil {
		t.Fatalf("find_gaps: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[gapRow])
	if err != nil {
		t.Fatalf("find_gaps: %v", err)
	}
	return out
}

func gapIDs(gaps []gapRow) []string {
	ids := make([]string, len(gaps))
	for i, g := range gaps {
		ids[i] = g.Provider + "/" + g.ExternalID
	}
	return ids
}

// TestFindGaps: the anti-join reports exactly the open expectations past
// their deadline with neither an event nor a tombstone, oldest deadline
// first, and filters by provider.
func TestFindGaps(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 2)
	for _, stmt := range []string{
		`SELECT webhooks.expect('sume', 'overdue-old', now() - interval '2 hours')`,
		`SELECT webhooks.expect('sume', 'overdue-new', now() - interval '1 minute', 'https://api.sume.test/v1/jobs/overdue-new/status')`,
		`SELECT webhooks.expect('sume', 'not-yet', now() + interval '1 hour')`,
		`SELECT webhooks.expect('sume', 'arrived', now() - interval '1 hour')`,
		`SELECT webhooks.expect('sume', 'tombstoned', now() - interval '1 hour')`,
		`SELECT webhooks.expect('sume', 'met', now() - interval '1 hour')`,
		`SELECT webhooks.expect('other', 'overdue', now() - interval '30 minutes')`,
		// An event of another provider with the same id does not fill the gap.
		`SELECT webhooks.expect('other', 'arrived', now() - interval '10 minutes')`,
		`SELECT webhooks.tombstone('sume', 'tombstoned', 'unknown to provider')`,
		// A met expectation is never read again, even if its event is gone.
		`UPDATE webhooks.expectations SET met_at = now() WHERE external_id = 'met'`,
	} {
		execSQL(t, pool, stmt)
	}
	ingest(t, pool, "sume", "arrived", "job.completed", `{"job_id": "arrived", "status": "COMPLETED"}`)

	sume, other := "sume", "other"
	tests := []struct {
		name     string
		provider *string
		want     []string
	}{
		{"all providers", nil, []string{"sume/overdue-old", "other/overdue", "other/arrived", "sume/overdue-new"}},
		{"one provider", &sume, []string{"sume/overdue-old", "sume/overdue-new"}},
		{"the other provider", &other, []string{"other/overdue", "other/arrived"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := gapIDs(findGaps(t, pool, tc.provider)); !slices.Equal(got, tc.want) {
				t.Fatalf("find_gaps(%v) = %v, want %v", tc.provider, got, tc.want)
			}
		})
	}
	gaps := findGaps(t, pool, &sume)
	if gaps[1].StatusURL == nil || *gaps[1].StatusURL != "https://api.sume.test/v1/jobs/overdue-new/status" {
		t.Fatalf("status_url of %s = %v", gaps[1].ExternalID, gaps[1].StatusURL)
	}
	unknown := "nobody"
	if got := findGaps(t, pool, &unknown); len(got) != 0 {
		t.Fatalf("gaps of an unknown provider: %v", got)
	}
}

// planJSON returns EXPLAIN (FORMAT JSON) of query as one string.
func planJSON(t *testing.T, pool *pgxpool.Pool, query string, args ...any) string {
	t.Helper()
	var plan []byte
	if err := pool.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&plan); err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	return string(plan)
}

// TestFindGapsReadsOnlyOpenExpectations: find_gaps is planned as an index
// scan of the partial index on open expectations (a plain SQL function, so
// it is inlined and EXPLAIN shows its real plan), not a scan of every
// expectation ever recorded.
func TestFindGapsReadsOnlyOpenExpectations(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	execSQL(t, pool, `
		INSERT INTO webhooks.expectations (provider, external_id, deadline, met_at)
		SELECT 'sume', 'met-' || g, now() - interval '1 day', now() FROM generate_series(1, 20000) g`)
	execSQL(t, pool, `
		INSERT INTO webhooks.expectations (provider, external_id, deadline)
		SELECT 'sume', 'open-' || g, now() - interval '1 hour' FROM generate_series(1, 20) g`)
	execSQL(t, pool, `ANALYZE webhooks.expectations`)
	for _, q := range []string{`SELECT * FROM webhooks.find_gaps()`, `SELECT * FROM webhooks.find_gaps('sume')`} {
		plan := planJSON(t, pool, q)
		if !strings.Contains(plan, `"Index Name": "expectations_open_idx"`) {
			t.Errorf("%s does not read expectations_open_idx:\n%s", q, plan)
		}
		if seqScanOn(plan, "expectations") {
			t.Errorf("%s scans the whole expectations table:\n%s", q, plan)
		}
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.find_gaps()`); n != 20 {
		t.Fatalf("find_gaps() = %d rows, want 20", n)
	}
}

// seqScanOn reports whether a JSON plan holds a Seq Scan of relation.
func seqScanOn(plan, relation string) bool {
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(plan), &nodes); err != nil {
		return false
	}
	var walk func(n map[string]any) bool
	walk = func(n map[string]any) bool {
		if n["Node Type"] == "Seq Scan" && n["Relation Name"] == relation {
			return true
		}
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok && walk(m) {
				return true
			}
		}
		return false
	}
	for _, n := range nodes {
		if p, ok := n["Plan"].(map[string]any); ok && walk(p) {
			return true
		}
	}
	return false
}

// TestExpectIdempotent: a repeated expect() never adds a row; on an open
// expectation the latest deadline wins and a non-NULL status_url replaces
// the stored one; a met expectation is left alone; an identical call writes
// nothing at all.
func TestExpectIdempotent(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	ctx := context.Background()
	type row struct {
		Deadline  time.Time
		StatusURL *string
		Checks    int
		MetAt     *time.Time
		Xmin      string
	}
	get := func(id string) row {
		t.Helper()
		var r row
		err := pool.QueryRow(ctx, `SELECT deadline, status_url, checks, met_at, xmin::text FROM webhooks.expectations
			WHERE provider = 'sume' AND external_id = $1`, id).Scan(&r.Deadline, &r.StatusURL, &r.Checks, &r.MetAt, &r.Xmin)
		if err != nil {
			t.Fatalf("expectation %s: %v", id, err)
		}
		return r
	}
	d1 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	d2 := d1.Add(time.Hour)
	d0 := d1.Add(-time.Hour)
	url1, url2 := "https://api.sume.test/v1/jobs/j/status", "https://api.sume.test/v2/jobs/j/status" // one origin: expect() cannot move it
	expect := func(id string, d time.Time, url *string) {
		t.Helper()
		execSQL(t, pool, `SELECT webhooks.expect('sume', $1, $2, $3)`, id, d, url)
	}

	expect("j", d1, &url1)
	first := get("j")
	expect("j", d1, &url1)
	expect("j", d1, nil) // NULL keeps the stored status_url
	if again := get("j"); again.Xmin != first.Xmin {
		t.Fatalf("an identical expect() rewrote the row (xmin %s → %s)", first.Xmin, again.Xmin)
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectations`); n != 1 {
		t.Fatalf("%d expectations after three calls, want 1", n)
	}

	execSQL(t, pool, `UPDATE webhooks.expectations SET checks = 3`)
	expect("j", d2, nil)
	if r := get("j"); !r.Deadline.Equal(d2) || r.StatusURL == nil || *r.StatusURL != url1 || r.Checks != 3 {
		t.Fatalf("after a later deadline: %+v, want deadline %s, status_url kept, checks kept", r, d2)
	}
	expect("j", d0, &url2)
	if r := get("j"); !r.Deadline.Equal(d0) || *r.StatusURL != url2 {
		t.Fatalf("after an earlier deadline and a new URL: %+v", r)
	}

	execSQL(t, pool, `UPDATE webhooks.expectations SET met_at = now()`)
	met := get("j")
	expect("j", d2, &url1)
	if r := get("j"); r.Xmin != met.Xmin || !r.Deadline.Equal(d0) {
		t.Fatalf("expect() changed a met expectation: %+v", r)
	}
}

// TestExpectRejects: bad arguments raise clear errors and write nothing.
func TestExpectRejects(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	tests := []struct {
		name, sql, code, msg string
	}{
		{"null provider", `SELECT webhooks.expect(NULL, 'j', now())`, "22004", "provider must not be null"},
		{"blank external_id", `SELECT webhooks.expect('p', ' ', now())`, "22023", "external_id must not be empty"},
		{"null deadline", `SELECT webhooks.expect('p', 'j', NULL)`, "22023", "deadline must be a finite timestamp"},
		{"infinite deadline", `SELECT webhooks.expect('p', 'j', 'infinity')`, "22023", "deadline must be a finite timestamp"},
		{"relative status_url", `SELECT webhooks.expect('p', 'j', now(), '/v1/jobs/j/status')`, "22023", "status_url must be an absolute http(s) URL"},
		{"ftp status_url", `SELECT webhooks.expect('p', 'j', now(), 'ftp://x/y')`, "22023", "status_url must be an absolute http(s) URL"},
		{"empty status_url", `SELECT webhooks.expect('p', 'j', now(), '')`, "22023", "status_url must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(context.Background(), tc.sql)
			wantPgError(t, err, tc.code, tc.msg)
		})
	}
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.expectations`); n != 0 {
		t.Fatalf("%d expectations written by failed calls", n)
	}
}

// TestTombstoneIdempotent: a second tombstone for an id changes nothing (the
// first reason stays), a tombstone for an id whose event is there is not
// written, and gap queries skip tombstoned ids.
func TestTombstoneIdempotent(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'job_x', 'unknown to provider')`)
	var xmin string
	if err := pool.QueryRow(context.Background(), `SELECT xmin::text FROM webhooks.tombstones`).Scan(&xmin); err != nil {
		t.Fatal(err)
	}
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'job_x', 'another reason')`)
	var reason, xmin2 string
	if err := pool.QueryRow(context.Background(), `SELECT reason, xmin::text FROM webhooks.tombstones`).Scan(&reason, &xmin2); err != nil {
		t.Fatal(err)
	}
	if reason != "unknown to provider" || xmin2 != xmin {
		t.Fatalf("second tombstone changed the row: reason %q, xmin %s → %s", reason, xmin, xmin2)
	}
	ingest(t, pool, "sume", "job_y", "job.completed", `{"job_id": "job_y", "status": "COMPLETED"}`)
	execSQL(t, pool, `SELECT webhooks.tombstone('sume', 'job_y', 'unknown to provider')`)
	if n := queryInt(t, pool, `SELECT count(*) FROM webhooks.tombstones`); n != 1 {
		t.Fatalf("%d tombstones, want 1 (none for an id whose event is there)", n)
	}
	_, err := pool.Exec(context.Background(), `SELECT webhooks.tombstone('sume', 'job_z', '')`)
	wantPgError(t, err, "22023", "reason must not be empty")
}

// seqGaps calls webhooks.find_sequence_gaps.
func seqGaps(t *testing.T, pool *pgxpool.Pool, provider string, from, to int64) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT external_id FROM webhooks.find_sequence_gaps($1, $2, $3)`, provider, from, to)
	if err != nil {
		t.Fatalf("find_sequence_gaps(%s, %d, %d): %v", provider, from, to, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("find_sequence_gaps(%s, %d, %d): %v", provider, from, to, err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids
}

func seqRange(from, to int) []string {
	out := []string{}
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// TestFindSequenceGaps: hand-made windows over received ids 1 2 3 5 8 9 10
// 20 and tombstones 6 and 15, with non-numeric and non-canonical ids around
// that must not count.
func TestFindSequenceGaps(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	for _, id := range []string{"1", "2", "3", "5", "8", "9", "10", "20",
		// not sequence ids: never fill a hole, never break the query.
		"abc", "007", "-4", "4.0", "1e1", "12 ", "+13", "99999999999999999999"} {
		ingest(t, pool, "seq", id, "t", `{}`)
	}
	ingest(t, pool, "elsewhere", "4", "t", `{}`) // another provider's id
	execSQL(t, pool, `SELECT webhooks.tombstone('seq', '6', 'skipped by the provider')`)
	execSQL(t, pool, `SELECT webhooks.tombstone('seq', '15', 'skipped by the provider')`)
	execSQL(t, pool, `SELECT webhooks.tombstone('seq', '016', 'non-canonical: does not cover 16')`)
	// An id both received and tombstoned (the event came after all).
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason) VALUES ('seq', '9', 'late')`)

	tests := []struct {
		name     string
		from, to int64
		want     []string
	}{
		{"whole range", 1, 20, []string{"4", "7", "11", "12", "13", "14", "16", "17", "18", "19"}},
		{"from zero", 0, 5, []string{"0", "4"}},
		{"gap at both edges", 4, 7, []string{"4", "7"}},
		{"gap at the start only", 4, 5, []string{"4"}},
		{"gap at the end only", 5, 7, []string{"7"}},
		{"window is one hole", 12, 12, []string{"12"}},
		{"window is one received id", 9, 9, []string{}},
		{"window is one tombstone", 15, 15, []string{}},
		{"no hole", 8, 10, []string{}},
		{"all holes inside tombstones", 14, 16, []string{"14", "16"}},
		{"beyond everything received (empty window)", 21, 25, seqRange(21, 25)},
		{"straddling the last id", 19, 22, []string{"19", "21", "22"}},
		{"largest ids", 999999999999999998, 999999999999999999, []string{"999999999999999998", "999999999999999999"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := seqGaps(t, pool, "seq", tc.from, tc.to); !slices.Equal(got, tc.want) {
				t.Fatalf("find_sequence_gaps(seq, %d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
	if got := seqGaps(t, pool, "nobody", 1, 3); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("a provider with no rows: %v, want every id", got)
	}
}

// TestFindSequenceGapsRejects: a reversed window, one outside the id range
// or NULL bounds raise a clear error.
func TestFindSequenceGapsRejects(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	tests := []struct {
		name, sql, code, msg string
	}{
		{"from after to", `SELECT * FROM webhooks.find_sequence_gaps('p', 10, 9)`, "22023", "from_seq (10) is greater than to_seq (9)"},
		{"negative from", `SELECT * FROM webhooks.find_sequence_gaps('p', -1, 9)`, "22003", "outside the sequence ids"},
		{"to past 18 digits", `SELECT * FROM webhooks.find_sequence_gaps('p', 1, 1000000000000000000)`, "22003", "outside the sequence ids"},
		{"null bound", `SELECT * FROM webhooks.find_sequence_gaps('p', NULL, 9)`, "22004", "from_seq and to_seq must not be null"},
		{"blank provider", `SELECT * FROM webhooks.find_sequence_gaps(' ', 1, 9)`, "22023", "provider must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(context.Background(), tc.sql)
			wantPgError(t, err, tc.code, tc.msg)
		})
	}
}

// TestFindSequenceGapsMatchesAntiJoin: on random data, the window-function
// version agrees with the textbook generate_series anti-join.
func TestFindSequenceGapsMatchesAntiJoin(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	rng := rand.New(rand.NewPCG(4, 2))
	var received, tombs []string
	for i := 0; i < 3000; i++ {
		switch r := rng.IntN(10); {
		case r < 6:
			received = append(received, strconv.Itoa(i))
		case r == 6:
			tombs = append(tombs, strconv.Itoa(i))
		}
	}
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'seq', id, 't', '{}' FROM unnest($1::text[]) AS id`, received)
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason)
		SELECT 'seq', id, 'r' FROM unnest($1::text[]) AS id`, tombs)
	for i := 0; i < 25; i++ {
		from := int64(rng.IntN(3100))
		to := from + int64(rng.IntN(400))
		got := seqGaps(t, pool, "seq", from, to)
		rows, err := pool.Query(context.Background(), `
			SELECT g.n::text FROM generate_series($1::bigint, $2::bigint) AS g (n)
			WHERE NOT EXISTS (SELECT FROM webhooks.events e WHERE e.provider = 'seq' AND e.external_id = g.n::text)
			  AND NOT EXISTS (SELECT FROM webhooks.tombstones t WHERE t.provider = 'seq' AND t.external_id = g.n::text)
			ORDER BY g.n`, from, to)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("window [%d, %d]: got %v, want %v", from, to, got, want)
		}
	}
}

// planNode is a node of an EXPLAIN (ANALYZE, FORMAT JSON) plan.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	FunctionName string     `json:"Function Name"`
	ActualRows   float64    `json:"Actual Rows"`
	ActualLoops  float64    `json:"Actual Loops"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, k := range n.Plans {
		k.walk(f)
	}
}

// TestFindSequenceGapsCostFollowsRows: over a window holding 20,000
// received ids with 7 holes, one of them tombstoned, the plan reads the
// received ids from the (provider, seq) index of webhooks.keys (no table
// scan, no day slice of history), and
// generate_series produces only the 7 missing ids, of which the tombstoned
// one is dropped: nothing proportional to the width of the window. (Row
// counts from EXPLAIN ANALYZE, not timings.)
func TestFindSequenceGapsCostFollowsRows(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	ctx := context.Background()
	// Received: 500000..519999, except 7 holes; one of them tombstoned.
	holes := []int{500000, 500001, 503333, 510000, 510001, 510002, 519999}
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'seq', g::text, 't', '{}' FROM generate_series(500000, 519999) g WHERE g <> ALL ($1::int[])`, holes)
	execSQL(t, pool, `INSERT INTO webhooks.events (provider, external_id, event_type, payload)
		SELECT 'other', g::text, 't', '{}' FROM generate_series(1, 20000) g`)
	execSQL(t, pool, `SELECT webhooks.tombstone('seq', '503333', 'skipped')`)
	execSQL(t, pool, `INSERT INTO webhooks.tombstones (provider, external_id, reason)
		SELECT 'other', g::text, 'r' FROM generate_series(30001, 35000) g`)
	execSQL(t, pool, `VACUUM ANALYZE webhooks.inbox, webhooks.keys`)
	execSQL(t, pool, `VACUUM ANALYZE webhooks.tombstones`)

	var raw []byte
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON)
		SELECT * FROM webhooks._sequence_gaps('seq', 500000, 519999)`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan: %v\n%s", err, raw)
	}
	indexes := map[string]bool{}
	var generated, windowInput float64
	var indexRows func(n planNode) float64
	indexRows = func(n planNode) float64 {
		sum := 0.0
		if n.IndexName == "keys_provider_seq_idx" {
			sum += n.ActualRows * n.ActualLoops
		}
		for _, k := range n.Plans {
			sum += indexRows(k)
		}
		return sum
	}
	plans[0].Plan.walk(func(n planNode) {
		if n.NodeType == "Seq Scan" {
			t.Errorf("sequential scan of %s", n.RelationName)
		}
		if n.IndexName != "" {
			indexes[n.IndexName] = true
		}
		for _, k := range n.Plans {
			// The join above generate_series: how many ids it produced in
			// all (a Function Scan's own row count is a per-loop average).
			if k.NodeType == "Function Scan" && k.FunctionName == "generate_series" {
				generated += n.ActualRows * n.ActualLoops
			}
		}
		if n.NodeType == "WindowAgg" {
			windowInput += indexRows(n)
		}
	})
	if !indexes["keys_provider_seq_idx"] || !indexes["tombstones_provider_seq_idx"] || len(indexes) != 2 {
		t.Errorf("indexes used: %v, want keys_provider_seq_idx and tombstones_provider_seq_idx", indexes)
	}
	if windowInput != 20000-7 {
		t.Errorf("lead() read %v rows from keys_provider_seq_idx, want the %d received", windowInput, 20000-7)
	}
	if generated != 7 {
		t.Errorf("generate_series produced %v ids, want only the 7 missing ones (one then dropped as tombstoned)", generated)
	}
	if t.Failed() {
		t.Logf("plan:\n%s", raw)
	}
	got := seqGaps(t, pool, "seq", 500000, 519999)
	if want := []string{"500000", "500001", "510000", "510001", "510002", "519999"}; !slices.Equal(got, want) {
		t.Fatalf("gaps = %v, want %v", got, want)
	}
}

// TestPostponeExpectation: each postponement moves the deadline to
// now() + base * 2^checks, capped at max_delay, and counts the check; a met
// or unknown expectation is not postponed.
func TestPostponeExpectation(t *testing.T) {
	t.Parallel()
	pool := NewPool(t, 1)
	execSQL(t, pool, `SELECT webhooks.expect('sume', 'j', now() - interval '1 minute')`)
	for i, want := range []string{"00:01:00", "00:02:00", "00:04:00", "00:05:00", "00:05:00"} {
		var delay string
		if err := pool.QueryRow(context.Background(), `
			SELECT (webhooks.postpone_expectation('sume', 'j', '1 minute', '5 minutes') - now())::text`).Scan(&delay); err != nil {
			t.Fatal(err)
		}
		if delay != want {
			t.Errorf("postponement %d: deadline now() + %s, want + %s", i+1, delay, want)
		}
		if n := queryInt(t, pool, `SELECT checks FROM webhooks.expectations WHERE external_id = 'j'`); n != int64(i+1) {
			t.Errorf("checks = %d after %d postponements", n, i+1)
		}
	}
	execSQL(t, pool, `UPDATE webhooks.expectations SET met_at = now()`)
	for _, id := range []string{"j", "never-expected"} {
		var d *time.Time
		if err := pool.QueryRow(context.Background(),
			`SELECT webhooks.postpone_expectation('sume', $1)`, id).Scan(&d); err != nil || d != nil {
			t.Fatalf("postpone %s: %v, %v; want NULL", id, d, err)
		}
	}
	_, err := pool.Exec(context.Background(), `SELECT webhooks.postpone_expectation('sume', 'j', '0 seconds')`)
	wantPgError(t, err, "22023", "base_delay must be a positive interval")
	_, err = pool.Exec(context.Background(), `SELECT webhooks.postpone_expectation('sume', 'j', '1 hour', '1 minute')`)
	wantPgError(t, err, "22023", "max_delay (00:01:00) must be at least base_delay (01:00:00)")
}
