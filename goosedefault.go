package pginbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3/database"
)

// A schema migrated by the stock goose CLI without GOOSE_TABLE has its
// versions in goose's default table, goose_db_version (in public, or
// wherever the connection's search_path puts it), not in [VersionTable].
// pginbox recognises such a schema instead of migrating it again (which
// fails on 00002: relation "events" already exists): [AppliedVersion]
// counts what the default table records, and [Migrate] copies those rows
// into [VersionTable] first, so goose's own check finds them applied.
//
// The default table may also be an application's own, with versions that
// overlap pginbox's, so its rows count only when all of these hold:
//   - webhooks.events exists: pginbox's schema was created;
//   - every row of [VersionTable] past version 1 is one copied from the
//     default table (same version, same tstamp): pginbox's own migrator never
//     applied anything there (a failed attempt on such a schema leaves only
//     versions 0 and 1, whose CREATE SCHEMA IF NOT EXISTS is harmless);
//   - the versions count from pginbox's first migration on, without a gap:
//     the newest adopted version is the last one of that unbroken run.
//
// The application's own table is otherwise never written to nor changed.

// rowQueryFunc runs a query expected to return at most one row: pgx's
// QueryRow or database/sql's QueryRowContext.
type rowQueryFunc func(ctx context.Context, query string, args ...any) interface{ Scan(...any) error }

// defaultTableQuery finds the goose CLI's default version table when it
// is worth reading: goose_db_version in the first schema of the
// connection's search_path that has one (where the CLI, naming it
// unqualified, created it), else in public; not [VersionTable]; in a schema
// this role may use and readable by it; next to a migrated webhooks.events.
// It returns the table's quoted qualified name, or no row. It reads the
// catalogs only, so it cannot fail on a schema the role may not use.
const defaultTableQuery = `
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relname = 'goose_db_version' AND c.relkind IN ('r', 'p')
  AND n.nspname <> 'webhooks'
  AND (n.nspname = ANY (pg_catalog.current_schemas(false)) OR n.nspname = 'public')
  AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
  AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
  AND EXISTS (SELECT FROM pg_catalog.pg_class AS e JOIN pg_catalog.pg_namespace AS en ON en.oid = e.relnamespace
              WHERE en.nspname = 'webhooks' AND e.relname = 'events')
ORDER BY coalesce(pg_catalog.array_position(pg_catalog.current_schemas(false), n.nspname), 2147483647)
LIMIT 1`

// defaultTable returns the quoted name of goose's default version table
// when [defaultTableQuery] finds one, else "".
func defaultTable(ctx context.Context, query rowQueryFunc) (string, error) {
	var name string
	err := query(ctx, defaultTableQuery).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look for goose's default version table: %w", err)
	}
	return name, nil
}

// adoptableQuery returns, for the default table %[1]s and pginbox's own
// rows %[2]s, whether pginbox's table holds only rows copied from the
// default one (past version 1), and the end of the unbroken run of
// pginbox's versions ($1, in order) that the two record as applied.
const adoptableQuery = `
WITH files AS (SELECT f.v, f.ord FROM unnest($1::bigint[]) WITH ORDINALITY AS f(v, ord)),
other AS (SELECT version_id, max(tstamp) AS tstamp FROM %[1]s WHERE is_applied GROUP BY version_id),
own AS (%[2]s),
gap AS (SELECT min(f.ord) AS ord FROM files AS f
        WHERE f.v NOT IN (SELECT version_id FROM other UNION ALL SELECT version_id FROM own))
SELECT NOT EXISTS (SELECT FROM own
                   WHERE own.version_id > 1
                     AND NOT EXISTS (SELECT FROM other AS o WHERE o.version_id = own.version_id AND o.tstamp = own.tstamp)),
       coalesce((SELECT max(f.v) FROM files AS f, gap WHERE gap.ord IS NULL OR f.ord < gap.ord), 0)`

// ownRows is what [adoptableQuery] reads of [VersionTable], or an empty set
// when that table does not exist.
func ownRows(exists bool) string {
	if !exists {
		return `SELECT NULL::bigint AS version_id, NULL::timestamp AS tstamp WHERE false`
	}
	return `SELECT version_id, tstamp FROM ` + VersionTable + ` WHERE is_applied`
}

// adoptable returns the goose CLI's default version table (quoted) and the
// newest pginbox version it records that pginbox's own table lacks, after
// the rules above; 0 (and "") when there is nothing to adopt. own is the
// newest version [VersionTable] records (0: none, or no table).
func adoptable(ctx context.Context, query rowQueryFunc, ownExists bool, own int64) (string, int64, error) {
	table, err := defaultTable(ctx, query)
	if err != nil || table == "" {
		return "", 0, err
	}
	versions, err := fileVersions()
	if err != nil {
		return "", 0, err
	}
	var copiesOnly bool
	var upTo int64
	if err := query(ctx, fmt.Sprintf(adoptableQuery, table, ownRows(ownExists)), versions).Scan(&copiesOnly, &upTo); err != nil {
		return "", 0, fmt.Errorf("read goose's default version table %s: %w", table, err)
	}
	if !copiesOnly || upTo <= own {
		return "", 0, nil
	}
	return table, upTo, nil
}

// fileVersions returns the versions of the embedded migrations, in order.
func fileVersions() ([]int64, error) {
	names, err := MigrationFiles()
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(names))
	for _, n := range names {
		v, err := versionOf(n)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// adoptDefaultTable copies into [VersionTable] (created as goose creates
// it, when missing) the rows of goose's default version table that record
// pginbox's migrations, after the rules above, inside tx, which holds the
// migration lock. It returns the newest version adopted (0: none).
func adoptDefaultTable(ctx context.Context, tx *sql.Tx) (int64, error) {
	query := func(ctx context.Context, q string, args ...any) interface{ Scan(...any) error } {
		return tx.QueryRowContext(ctx, q, args...)
	}
	exists, own, err := ownVersion(ctx, query)
	if err != nil {
		return 0, err
	}
	table, upTo, err := adoptable(ctx, query, exists, own)
	if err != nil || upTo == 0 {
		return 0, err
	}
	if !exists {
		store, err := database.NewStore(database.DialectPostgres, VersionTable)
		if err != nil {
			return 0, fmt.Errorf("migrate: version table: %w", err)
		}
		if err := store.CreateVersionTable(ctx, tx); err != nil {
			return 0, fmt.Errorf("migrate: %w", err)
		}
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
			return 0, fmt.Errorf("migrate: version table: %w", err)
		}
	}
	versions, err := fileVersions()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`
		INSERT INTO `+VersionTable+` (version_id, is_applied, tstamp)
		SELECT version_id, true, max(tstamp) FROM %s
		WHERE is_applied AND version_id = ANY ($1::bigint[]) AND version_id <= $2
		  AND version_id NOT IN (SELECT version_id FROM `+VersionTable+` WHERE is_applied)
		GROUP BY version_id
		ORDER BY version_id`, table), versions, upTo); err != nil {
		return 0, fmt.Errorf("migrate: adopt the versions of %s: %w", table, err)
	}
	return upTo, nil
}

// ownVersion reports whether [VersionTable] exists and the newest version
// it records as applied (0: none).
func ownVersion(ctx context.Context, query rowQueryFunc) (bool, int64, error) {
	var exists bool
	if err := query(ctx, `SELECT pg_catalog.to_regclass($1) IS NOT NULL`, VersionTable).Scan(&exists); err != nil {
		return false, 0, fmt.Errorf("read schema version: %w", err)
	}
	if !exists {
		return false, 0, nil
	}
	var v int64
	if err := query(ctx,
		`SELECT coalesce(max(version_id), 0) FROM `+VersionTable+` WHERE is_applied`).Scan(&v); err != nil {
		return false, 0, fmt.Errorf("read schema version: %w", err)
	}
	return true, v, nil
}
