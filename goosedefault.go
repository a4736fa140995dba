package pginbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// A version counts as the goose CLI does: by its newest row (highest id),
// so one applied and then rolled back by a goose that records a down as a
// row with is_applied false is not applied. A table of another shape (no
// id, version_id, is_applied and tstamp columns of goose's types, readable
// by this role) is not goose's and is never read; should reading it still
// fail on its shape or privileges, it is taken as holding nothing to adopt
// (logged at debug), so it never breaks a migrate or a readiness check.
//
// The application's own table is otherwise never written to nor changed.

// rowQueryFunc runs a query expected to return at most one row: pgx's
// QueryRow or database/sql's QueryRowContext.
type rowQueryFunc func(ctx context.Context, query string, args ...any) interface{ Scan(...any) error }

// defaultTableQuery finds the goose CLI's default version table when it
// is worth reading: goose_db_version in the first schema of the
// connection's search_path that has one (where the CLI, naming it
// unqualified, created it), else in public; not [VersionTable]; in a schema
// this role may use and readable by it, with goose's columns (id and
// version_id integers, is_applied boolean, tstamp a timestamp), each
// readable by this role; next to a migrated webhooks.events. It returns the
// table's quoted qualified name, or no row. It reads the catalogs only, so it
// cannot fail on a schema the role may not use nor on a table of another
// shape.
const defaultTableQuery = `
SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
FROM pg_catalog.pg_class AS c
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relname = 'goose_db_version' AND c.relkind IN ('r', 'p')
  AND n.nspname <> 'webhooks'
  AND (n.nspname = ANY (pg_catalog.current_schemas(false)) OR n.nspname = 'public')
  AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
  AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
  AND (SELECT pg_catalog.count(*) FROM pg_catalog.pg_attribute AS a
       WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         AND pg_catalog.has_column_privilege(c.oid, a.attnum, 'SELECT')
         AND ((a.attname IN ('id', 'version_id')
               AND a.atttypid IN ('pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype,
                                  'pg_catalog.int8'::pg_catalog.regtype))
              OR (a.attname = 'is_applied' AND a.atttypid = 'pg_catalog.bool'::pg_catalog.regtype)
              OR (a.attname = 'tstamp'
                  AND a.atttypid IN ('pg_catalog.timestamp'::pg_catalog.regtype,
                                     'pg_catalog.timestamptz'::pg_catalog.regtype)))) = 4
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

// appliedQuery reads the default table %s as the goose CLI does: each
// version's newest row (highest id), kept when it records the version
// applied (a goose that records a down as a row with is_applied false
// rolled it back). Rows version_id, tstamp.
const appliedQuery = `SELECT version_id, tstamp FROM (
	SELECT DISTINCT ON (version_id) version_id, is_applied, tstamp FROM %s ORDER BY version_id, id DESC
) AS newest WHERE is_applied`

// adoptableQuery returns, for the versions the default table records as
// applied %[1]s ([appliedQuery]) and pginbox's own rows %[2]s, whether pginbox's table holds only rows copied from the
// default one (past version 1), and the end of the unbroken run of
// pginbox's versions ($1, in order) that the two record as applied.
const adoptableQuery = `
WITH files AS (SELECT f.v, f.ord FROM unnest($1::bigint[]) WITH ORDINALITY AS f(v, ord)),
other AS (%[1]s),
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
	q := fmt.Sprintf(adoptableQuery, fmt.Sprintf(appliedQuery, table), ownRows(ownExists))
	if err := query(ctx, q, versions).Scan(&copiesOnly, &upTo); err != nil {
		if notGoosesTable(err) {
			return "", 0, &notAdoptableError{table: table, err: err}
		}
		return "", 0, fmt.Errorf("read goose's default version table %s: %w", table, err)
	}
	if !copiesOnly || upTo <= own {
		return "", 0, nil
	}
	return table, upTo, nil
}

// notAdoptableError is a default version table that could not be read for
// its shape or privileges: nothing is adopted from it.
type notAdoptableError struct {
	table string
	err   error
}

func (e *notAdoptableError) Error() string {
	return fmt.Sprintf("%s is not a goose version table this role can read: %v", e.table, e.err)
}

func (e *notAdoptableError) Unwrap() error { return e.err }

// notGoosesTable reports whether err is a table's shape or privileges
// refusing the read of [adoptableQuery]: a missing table or column, a
// column of another type, or a privilege this role lacks.
func notGoosesTable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "42P01", // undefined_table
		"42703", // undefined_column
		"42804", // datatype_mismatch
		"42883", // undefined_function: an operator for another column type
		"42846", // cannot_coerce
		"42501": // insufficient_privilege
		return true
	}
	return false
}

// logNotAdoptable logs, at debug, a default version table skipped because
// it could not be read ([notAdoptableError]).
func logNotAdoptable(ctx context.Context, na *notAdoptableError) {
	slog.DebugContext(ctx, "goose's default version table not adopted: it could not be read as goose's",
		"table", na.table, "error", na.err)
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
	// A read refused for the table's shape must not abort tx.
	if _, err := tx.ExecContext(ctx, `SAVEPOINT pginbox_adopt`); err != nil {
		return 0, fmt.Errorf("migrate: savepoint: %w", err)
	}
	table, upTo, err := adoptable(ctx, query, exists, own)
	var na *notAdoptableError
	if errors.As(err, &na) {
		logNotAdoptable(ctx, na)
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT pginbox_adopt`); err != nil {
			return 0, fmt.Errorf("migrate: rollback to savepoint: %w", err)
		}
		return 0, nil
	}
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
		SELECT version_id, true, tstamp FROM (%s) AS applied
		WHERE version_id = ANY ($1::bigint[]) AND version_id <= $2
		  AND version_id NOT IN (SELECT version_id FROM `+VersionTable+` WHERE is_applied)
		ORDER BY version_id`, fmt.Sprintf(appliedQuery, table)), versions, upTo); err != nil {
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
