package status

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// OrderedProvider is one provider's ordering: its settings (absent for a provider
// whose ordering was cleared but whose events were processed out of order),
// how many of its sequences are blocked and since when the oldest, and its
// events processed out of order.
type OrderedProvider struct {
	Provider string `json:"provider"`
	// Ordered is false for a provider no longer ordered that still counts
	// events processed out of order.
	Ordered    bool    `json:"ordered"`
	KeyPath    string  `json:"key_path,omitempty"`
	OrderPath  *string `json:"order_path"`
	DeadBlocks bool    `json:"dead_blocks"`
	// Blocked is how many sequences are blocked; OldestBlockedSince when the
	// longest-blocked one started to block (nil: none is).
	Blocked            int64      `json:"blocked_sequences"`
	OldestBlockedSince *time.Time `json:"oldest_blocked_since"`
	// Waiting is how many events wait behind the blocked heads.
	Waiting int64 `json:"waiting_events"`
	// OutOfOrder is how many events were processed after a later event of
	// their sequence (late arrivals), those pruned since included.
	OutOfOrder int64 `json:"out_of_order_total"`
}

// Sequence is one blocked sequence: its head event and what waits on it.
type Sequence struct {
	Provider string `json:"provider"`
	// Key is the sequence's key, the payload's value at the provider's
	// key_path; nil when the role reading may not see it (a grant_reader
	// role: HeadID tells its sequences apart).
	Key           *string    `json:"sequence_key"`
	HeadID        int64      `json:"head_event_id"`
	HeadStatus    string     `json:"head_status"`
	HeadEventType string     `json:"head_event_type"`
	HeadExternal  string     `json:"head_external_id"`
	Attempts      int32      `json:"attempts"`
	MaxAttempts   int32      `json:"max_attempts"`
	LastError     *string    `json:"last_error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	BlockedSince  time.Time  `json:"blocked_since"`
	Waiting       int64      `json:"waiting_events"`
}

// Ordering is every ordered provider and its longest-blocked sequences.
type Ordering struct {
	Providers []OrderedProvider `json:"providers"`
	// Blocked are the longest-blocked sequences first, at most the limit
	// ReadOrdering was given; Providers[i].Blocked has the full counts.
	Blocked []Sequence `json:"blocked"`
}

// OrderCounts are the ordering figures the metrics export, per provider.
type OrderCounts struct {
	// OutOfOrder is events processed out of order, pruned ones included.
	OutOfOrder map[string]int64
	// Blocked is blocked sequences, 0 for every ordered provider without.
	Blocked map[string]int64
}

// ReadOrderCounts reads the per-provider ordering counts: one short query over the
// small webhooks.ordering and webhooks.out_of_order_pruned tables and the
// partial index of late and failing ordered events (events_order_attention_idx).
func ReadOrderCounts(ctx context.Context, q Querier) (OrderCounts, error) {
	c := OrderCounts{OutOfOrder: map[string]int64{}, Blocked: map[string]int64{}}
	rows, err := q.Query(ctx, countsSQL)
	if err != nil {
		return c, fmt.Errorf("ordering counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var ordered bool
		var ooo, blocked int64
		if err := rows.Scan(&p, &ordered, &ooo, &blocked); err != nil {
			return c, fmt.Errorf("ordering counts: %w", err)
		}
		c.OutOfOrder[p] = ooo
		if ordered || blocked > 0 {
			c.Blocked[p] = blocked
		}
	}
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("ordering counts: %w", err)
	}
	return c, nil
}

// countsSQL: per provider that is ordered or has events processed out of
// order: whether it is ordered, its out-of-order total and its blocked
// sequences.
const countsSQL = `
	WITH ooo AS (
	    SELECT x.provider, sum(x.n)::bigint AS n
	    FROM (SELECT e.provider, count(*) AS n FROM webhooks.events AS e WHERE e.out_of_order GROUP BY e.provider
	          UNION ALL
	          SELECT p.provider, p.events FROM webhooks.out_of_order_pruned AS p) AS x
	    GROUP BY x.provider
	), blocked AS (
	    SELECT b.provider, count(*) AS n FROM webhooks.blocked_sequences AS b GROUP BY b.provider
	)
	SELECT coalesce(o.provider, ooo.provider, blocked.provider), o.provider IS NOT NULL,
	       coalesce(ooo.n, 0), coalesce(blocked.n, 0)
	FROM webhooks.ordering AS o
	FULL JOIN ooo ON ooo.provider = o.provider
	FULL JOIN blocked ON blocked.provider = coalesce(o.provider, ooo.provider)
	ORDER BY 1`

// ReadOrdering returns every ordered provider (and every provider with events
// processed out of order), with its blocked sequences counted, and the
// limit longest-blocked sequences of provider ("" for all).
func ReadOrdering(ctx context.Context, q Querier, provider string, limit int) (Ordering, error) {
	st := Ordering{Providers: []OrderedProvider{}, Blocked: []Sequence{}}
	counts, err := ReadOrderCounts(ctx, q)
	if err != nil {
		return st, err
	}
	rows, err := q.Query(ctx, `
		SELECT o.provider, o.key_path, o.order_path, o.dead_blocks,
		       min(b.blocked_since), coalesce(sum(b.waiting), 0)::bigint
		FROM webhooks.ordering AS o
		LEFT JOIN webhooks.blocked_sequences AS b ON b.provider = o.provider
		GROUP BY o.provider, o.key_path, o.order_path, o.dead_blocks
		ORDER BY o.provider`)
	if err != nil {
		return st, fmt.Errorf("ordering settings: %w", err)
	}
	seen := map[string]bool{}
	for rows.Next() {
		p := OrderedProvider{Ordered: true}
		if err := rows.Scan(&p.Provider, &p.KeyPath, &p.OrderPath, &p.DeadBlocks, &p.OldestBlockedSince, &p.Waiting); err != nil {
			rows.Close()
			return st, fmt.Errorf("ordering settings: %w", err)
		}
		p.Blocked, p.OutOfOrder = counts.Blocked[p.Provider], counts.OutOfOrder[p.Provider]
		seen[p.Provider] = true
		if provider == "" || p.Provider == provider {
			st.Providers = append(st.Providers, p)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("ordering settings: %w", err)
	}
	for name, n := range counts.OutOfOrder {
		if !seen[name] && (provider == "" || name == provider) {
			st.Providers = append(st.Providers, OrderedProvider{Provider: name, OutOfOrder: n, Blocked: counts.Blocked[name]})
		}
	}
	sort.Slice(st.Providers, func(i, j int) bool { return st.Providers[i].Provider < st.Providers[j].Provider })
	if limit <= 0 {
		return st, nil
	}
	// sequence_key is a value from the payload, which a reader role may not
	// select: the list reads NULL in its place rather than fail.
	key := "NULL::text"
	if ok, err := mayReadKeys(ctx, q); err != nil {
		return st, err
	} else if ok {
		key = "b.sequence_key"
	}
	rows, err = q.Query(ctx, `
		SELECT b.provider, `+key+`, b.head_event_id, b.head_status, b.head_event_type, b.head_external_id,
		       b.attempts, b.max_attempts, b.last_error, b.next_attempt_at, b.blocked_since, b.waiting
		FROM webhooks.blocked_sequences AS b
		WHERE $1 = '' OR b.provider = $1
		ORDER BY b.blocked_since, b.head_event_id
		LIMIT $2`, provider, limit)
	if err != nil {
		return st, fmt.Errorf("blocked sequences: %w", err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Sequence])
	if err != nil {
		return st, fmt.Errorf("blocked sequences: %w", err)
	}
	st.Blocked = append(st.Blocked, seqs...)
	return st, nil
}

// mayReadKeys says whether the session may select
// webhooks.blocked_sequences.sequence_key (grant_reader does not give it).
func mayReadKeys(ctx context.Context, q Querier) (bool, error) {
	rows, err := q.Query(ctx, `SELECT pg_catalog.has_column_privilege('webhooks.blocked_sequences', 'sequence_key', 'SELECT')`)
	if err != nil {
		return false, fmt.Errorf("blocked sequences: %w", err)
	}
	ok, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil {
		return false, fmt.Errorf("blocked sequences: %w", err)
	}
	return ok, nil
}
