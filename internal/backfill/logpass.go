package backfill

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// logPass is the state of one event-log pass of one provider.
type logPass struct {
	pool *pgxpool.Pool
	el   EventLog
	r    *requester
	rep  *LogReport
	log  *slog.Logger
	// seen holds the keys handled this pass: a GitHub log lists every
	// attempt of a delivery, and the top and resumed reads may meet.
	seen map[string]bool
	// newest is the newest created time listed in the window, served the
	// newest Date of a list page: the provider's own clock.
	newest, served time.Time
}

// logRead is how far one read of the list (from one cursor down) got.
type logRead struct {
	// pages is how many pages were read and handled whole.
	pages int
	// cursor is the cursor of the first page not handled ("" when the read
	// reached the bottom of its window); reached the oldest created time
	// on the last page handled.
	cursor  string
	reached time.Time
	// cycle reports that the list's cursors ran in a cycle.
	cycle bool
}

// providerNow is the provider's clock as the pass saw it: the newest Date
// of its list pages, or the newest created time listed when none had one;
// zero when nothing was read.
func (p *logPass) providerNow() time.Time {
	if !p.served.IsZero() {
		return p.served
	}
	return p.newest
}

// run reads the window of p.rep and returns the resume point to record
// (nil: none; Until zero: to be set to the end of this window). Without a
// resume point it reads the window from the top. With one, it reads the
// new entries from the top down to the resume point's Until minus the
// overlap, then goes on from its cursor down to the bottom of the window.
func (p *logPass) run(ctx context.Context, st logState, overlap time.Duration) (*resumePoint, error) {
	if st.resume == nil {
		top, err := p.read(ctx, p.rep.From, "")
		if err != nil && top.pages > 0 && !top.cycle && len(top.cursor) <= maxResumeCursor {
			return &resumePoint{Cursor: top.cursor, Reached: top.reached}, err
		}
		return nil, err
	}
	old := st.resume
	_, err := p.read(ctx, maxTime(p.rep.From, old.Until.Add(-overlap)), "")
	if err != nil {
		return old, err // the new entries were not all read: the old point stands
	}
	p.rep.Resumed = true
	bottom, err := p.read(ctx, p.rep.From, old.Cursor)
	switch {
	case err == nil:
		return nil, nil
	case bottom.pages == 0 && cursorRefused(err):
		// The provider no longer takes the cursor (an event deleted, a
		// cursor expired): start over from the top next time.
		p.log.Warn("backfill: the provider refused the resume cursor; the next pass reads the window from the top", "error", err)
		return nil, err
	case bottom.pages > 0 && !bottom.cycle && len(bottom.cursor) <= maxResumeCursor:
		return &resumePoint{Cursor: bottom.cursor, Reached: bottom.reached}, err
	default:
		// Nothing more was read below the cursor, but the top was: the
		// next pass reads the top from here.
		return &resumePoint{Cursor: old.Cursor, Reached: old.Reached}, err
	}
}

// read pages through the list from cursor (the top when "") down to the
// first page reaching before stop, or the last page, and ingests what is
// missing. Entries after p.rep.To are left for a later pass. A cursor met
// twice ends the read with a *MalformedError (cycle set).
func (p *logPass) read(ctx context.Context, stop time.Time, cursor string) (logRead, error) {
	res := logRead{cursor: cursor}
	visited := map[string]bool{cursor: true}
	for {
		page, err := retry(ctx, p.r, func(ctx context.Context) (LogPage, error) { return p.el.Page(ctx, p.rep.From, cursor) })
		if err != nil {
			return res, err
		}
		p.rep.Pages++
		if page.ServedAt.After(p.served) {
			p.served = page.ServedAt
		}
		older := false
		var reached time.Time
		var batch []LogEntry
		for _, e := range page.Entries {
			if !e.Created.IsZero() {
				if e.Created.Before(stop) {
					older = true
					continue
				}
				if e.Created.After(p.rep.To) {
					continue
				}
				if e.Created.After(p.newest) {
					p.newest = e.Created
				}
				reached = e.Created
			}
			if e.Key != "" {
				if p.seen[e.Key] {
					continue
				}
				p.seen[e.Key] = true
			}
			batch = append(batch, e)
		}
		if err := p.ingest(ctx, batch); err != nil {
			return res, err
		}
		res.pages++
		res.cursor = page.Next
		if !reached.IsZero() {
			res.reached = reached
		}
		if page.Next == "" || older {
			res.cursor = ""
			return res, nil
		}
		if visited[page.Next] {
			res.cycle = true
			p.log.Warn("backfill: the list's cursors run in a cycle; the pass ends here", "cursor", page.Next)
			return res, &MalformedError{Provider: p.el.Provider(), ExternalID: "(list)",
				Reason: "the list's cursors run in a cycle (a next page already read this pass)"}
		}
		visited[page.Next] = true
		cursor = page.Next
	}
}

// ingest stores the entries of one page that are not stored yet; an entry
// that cannot be stored is logged, counted and passed over.
func (p *logPass) ingest(ctx context.Context, batch []LogEntry) error {
	if len(batch) == 0 {
		return nil
	}
	p.rep.Listed += len(batch)
	var keys []string
	for _, e := range batch {
		if e.Key != "" {
			keys = append(keys, e.Key)
		}
	}
	// webhooks.keys holds every key stored (until keep_keys), also after
	// prune() dropped its event's day of history: one probe of its primary
	// key per entry. An entry whose key it misses is ingested, and
	// ingest_webhook() answers duplicate for a key stored before storage v2
	// whose copy into keys is still under way.
	rows, err := p.pool.Query(ctx, `SELECT external_id FROM webhooks.keys WHERE provider = $1 AND external_id = ANY($2)`,
		p.el.Provider(), keys)
	if err != nil {
		return fmt.Errorf("look up stored keys: %w", err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look up stored keys: %w", err)
	}
	have := make(map[string]bool, len(stored))
	for _, k := range stored {
		have[k] = true
	}
	for _, e := range batch {
		if e.Key != "" && have[e.Key] {
			p.rep.Duplicates++
			continue
		}
		if e.Skip != "" {
			p.skip(e, e.Skip)
			continue
		}
		if e.NeedsFetch {
			fetched, err := retry(ctx, p.r, func(ctx context.Context) (LogEntry, error) { return p.el.Fetch(ctx, e) })
			if reason, ok := unfetchable(err); ok && ctx.Err() == nil {
				p.skip(e, reason)
				continue
			}
			if err != nil {
				return err
			}
			e = fetched
			p.rep.Fetched++
		}
		outcome, err := ingestEvent(ctx, p.pool, p.el.Provider(), e.Key, e.EventType, e.Payload)
		if reason, ok := refusedByPostgres(err); ok {
			p.skip(e, reason)
			continue
		}
		if err != nil {
			return err
		}
		if outcome == "created" {
			p.rep.Recovered++
		} else {
			p.rep.Duplicates++
		}
	}
	return nil
}

// skip logs and counts an entry passed over.
func (p *logPass) skip(e LogEntry, reason string) {
	p.rep.Skipped++
	p.log.Warn("backfill: a listed entry cannot be stored; passed over", "key", e.Key, "created", e.Created, "reason", reason)
}

// unfetchable reports why a Fetch error means the entry can never be
// fetched (a detail that is not a usable answer, or a 4xx other than
// 401/403/408/429); retrying it would fail again. Other errors end the pass.
func unfetchable(err error) (string, bool) {
	var malformed *MalformedError
	if errors.As(err, &malformed) {
		return malformed.Reason, true
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 &&
		!apiErr.Retryable() && !errors.Is(err, ErrUnauthorized) {
		return fmt.Sprintf("the detail answered HTTP %d", apiErr.StatusCode), true
	}
	return "", false
}

// refusedByPostgres reports why an ingest error is Postgres refusing the
// entry itself (a data exception such as \u0000 in a string, a constraint,
// a program limit, or ingest_webhook raising on an argument); every other
// error (the connection, a cancel, a serialization failure) ends the pass.
func refusedByPostgres(err error) (string, bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return "", false
	}
	switch pgErr.Code[:2] {
	case "22", "23", "54":
	default:
		if pgErr.Code != "P0001" {
			return "", false
		}
	}
	return fmt.Sprintf("refused by Postgres (SQLSTATE %s: %s)", pgErr.Code, pgErr.Message), true
}

// cursorRefused reports whether err is the provider refusing a cursor: a
// 4xx other than 401/403/408/429 on a list page.
func cursorRefused(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 &&
		apiErr.StatusCode != http.StatusUnauthorized && apiErr.StatusCode != http.StatusForbidden && !apiErr.Retryable()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
