package sqlsrc

import (
	"strings"
	"testing"
	"testing/fstest"
)

const fnV1 = `CREATE OR REPLACE FUNCTION webhooks.f(x int) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
COMMENT ON FUNCTION webhooks.f(int) IS 'f';
`

const fnV2 = `CREATE OR REPLACE FUNCTION webhooks.f(x int) RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;
COMMENT ON FUNCTION webhooks.f(int) IS 'f';
`

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// checkout is a tree in step: one schema migration, one released function
// and one generated restatement of it.
func checkout() fstest.MapFS {
	return fstest.MapFS{
		"sql/schema/00001_create_table_t.sql":          file(upLine + "\nCREATE TABLE webhooks.t ();\n"),
		"sql/functions/00002_create_function_f.sql":    file(upLine + "\n" + fnV1),
		"sql/functions/00003_replace_function_f.sql":   file(generated("sql/src/process/f.sql", fnV2)),
		"sql/src/process/f.sql":                        file(fnV2),
		"sql/checks/00004_insert_checks_latency.sql":   file(upLine + "\nINSERT INTO webhooks.checks VALUES ('a');\n"),
		"sql/src/watch/checks_latency.sql":             file("INSERT INTO webhooks.checks VALUES ('a');\n"),
		"sql/views/00005_create_view_v.sql":            file(upLine + "\n-- note\n" + generated("sql/src/watch/v.sql", viewV1)[len(upLine)+1:]),
		"sql/src/watch/v.sql":                          file(viewV1),
		"sql/functions/README.md":                      file("not a migration"),
		"sql/schema/00006_grant_readers_new_table.sql": file(upLine + "\nDO $$ BEGIN END $$;\n"),
	}
}

// publisher rewrites webhooks.f at run time, as _ordering_publish rewrites
// _ordered_providers.
const publisher = `-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks.p() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format(
        'CREATE OR REPLACE FUNCTION webhooks.f(x int) RETURNS int LANGUAGE sql AS %L', 'SELECT 3');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION webhooks.p() IS 'p';
`

const viewV1 = "CREATE MATERIALIZED VIEW webhooks.v AS SELECT 1;\nCOMMENT ON MATERIALIZED VIEW webhooks.v IS 'v';\n"

func generated(src, text string) string {
	return upLine + "\n-- begin " + src + " (generated)\n" + text + "-- end " + src + "\n"
}

func TestProblemsAndPending(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		edit     func(fstest.MapFS)
		problems []string // substrings, one per problem, in order
		pending  []string // paths
	}{
		{name: "in step", edit: func(fstest.MapFS) {}},
		{
			name:     "source edited",
			edit:     func(f fstest.MapFS) { f["sql/src/process/f.sql"] = file(strings.ReplaceAll(fnV2, "2", "3")) },
			problems: []string{"sql/src/process/f.sql differs from its newest migration sql/functions/00003_replace_function_f.sql"},
			pending:  []string{"sql/functions/00007_replace_function_f.sql"},
		},
		{
			name: "new source",
			edit: func(f fstest.MapFS) {
				f["sql/src/admin/g.sql"] = file(strings.ReplaceAll(fnV1, "webhooks.f", "webhooks.g"))
			},
			problems: []string{"sql/src/admin/g.sql has no migration"},
			pending:  []string{"sql/functions/00007_create_function_g.sql"},
		},
		{
			name:     "view edited",
			edit:     func(f fstest.MapFS) { f["sql/src/watch/v.sql"] = file(strings.ReplaceAll(viewV1, "1", "2")) },
			problems: []string{"sql/src/watch/v.sql differs"},
			pending:  []string{"sql/views/00007_replace_view_v.sql"},
		},
		{
			name: "checks edited",
			edit: func(f fstest.MapFS) {
				f["sql/src/watch/checks_latency.sql"] = file("INSERT INTO webhooks.checks VALUES ('b');\n")
			},
			problems: []string{"sql/src/watch/checks_latency.sql differs"},
			pending:  []string{"sql/checks/00007_update_checks_latency.sql"},
		},
		{
			name:     "migration without a source",
			edit:     func(f fstest.MapFS) { delete(f, "sql/src/process/f.sql") },
			problems: []string{"sql/functions/00002_create_function_f.sql: no source sql/src/<concern>/f.sql"},
		},
		{
			name: "two sources of one object, by file name",
			edit: func(f fstest.MapFS) { f["sql/src/admin/f.sql"] = file(fnV2) },
			problems: []string{
				"sql/src/admin/f.sql and sql/src/process/f.sql: two sources define f",
			},
		},
		{
			name: "two sources of one object, by signature",
			edit: func(f fstest.MapFS) {
				f["sql/src/admin/f_other.sql"] = file(fnV2)
				f["sql/functions/00007_create_function_f_other.sql"] = file(generated("sql/src/admin/f_other.sql", fnV2))
			},
			problems: []string{"sql/src/admin/f_other.sql and sql/src/process/f.sql: two sources define webhooks.f(int)"},
		},
		{
			name: "two functions in one source",
			edit: func(f fstest.MapFS) {
				f["sql/src/process/f.sql"] = file(fnV2 + strings.ReplaceAll(fnV2, "webhooks.f", "webhooks.h"))
			},
			problems: []string{
				"sql/functions/00002_create_function_f.sql: no source sql/src/<concern>/f.sql",
				"sql/src/process/f.sql: a source defines exactly one function or view",
			},
		},
		{
			name: "source named for another object",
			edit: func(f fstest.MapFS) {
				f["sql/src/admin/k.sql"] = file(strings.ReplaceAll(fnV1, "webhooks.f", "webhooks.g"))
			},
			problems: []string{"sql/src/admin/k.sql: defines webhooks.g; name the file for it"},
		},
		{
			name:     "function created in sql/schema",
			edit:     func(f fstest.MapFS) { f["sql/schema/00007_create_table_u.sql"] = file(upLine + "\n" + fnV1) },
			problems: []string{"sql/schema/00007_create_table_u.sql: creates function webhooks.f"},
		},
		{
			name:     "migration not named for an object",
			edit:     func(f fstest.MapFS) { f["sql/functions/00007_fix_things.sql"] = file(upLine + "\n" + fnV2) },
			problems: []string{"sql/functions/00007_fix_things.sql: a migration of sql/functions is named"},
		},
		{
			name: "a function rewritten at run time, not published again by its file",
			edit: func(f fstest.MapFS) {
				f["sql/src/order/p.sql"] = file(publisher)
				f["sql/functions/00007_create_function_p.sql"] = file(generated("sql/src/order/p.sql", publisher))
			},
			problems: []string{"sql/src/process/f.sql: webhooks.f is rewritten at run time (sql/src/order/p.sql writes it)"},
		},
		{
			name: "a function rewritten at run time, published again by its file",
			edit: func(f fstest.MapFS) {
				f["sql/src/order/p.sql"] = file(publisher)
				f["sql/functions/00007_create_function_p.sql"] = file(generated("sql/src/order/p.sql", publisher))
				f["sql/src/process/f.sql"] = file(fnV2 + "UPDATE webhooks.t SET x = x;\n")
				f["sql/functions/00008_replace_function_f.sql"] = file(generated("sql/src/process/f.sql", fnV2+"UPDATE webhooks.t SET x = x;\n"))
			},
		},
		{
			name: "begin without end",
			edit: func(f fstest.MapFS) {
				f["sql/functions/00003_replace_function_f.sql"] = file(upLine + "\n-- begin sql/src/process/f.sql\n" + fnV2)
			},
			problems: []string{
				"sql/functions/00003_replace_function_f.sql: does not open with",
				"sql/src/process/f.sql differs from its newest migration sql/functions/00002_create_function_f.sql",
			},
			pending: []string{"sql/functions/00007_replace_function_f.sql"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys := checkout()
			tc.edit(fsys)
			tree, err := Load(fsys)
			if err != nil {
				t.Fatal(err)
			}
			got := tree.Problems()
			if len(got) != len(tc.problems) {
				t.Fatalf("problems %q, want %d matching %q", got, len(tc.problems), tc.problems)
			}
			for i, want := range tc.problems {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %d is %q, want it to contain %q", i, got[i], want)
				}
			}
			var paths []string
			for _, f := range tree.Pending() {
				paths = append(paths, f.Path)
			}
			if strings.Join(paths, ",") != strings.Join(tc.pending, ",") {
				t.Errorf("pending %q, want %q", paths, tc.pending)
			}
		})
	}
}

// TestPendingWritesWhatLoadReads: a migration Pending writes states its
// source exactly, so the tree is in step once it is written; a view is
// dropped before it is created again.
func TestPendingWritesWhatLoadReads(t *testing.T) {
	t.Parallel()
	fsys := checkout()
	fsys["sql/src/process/f.sql"] = file(strings.ReplaceAll(fnV2, "2", "3"))
	fsys["sql/src/watch/v.sql"] = file(strings.ReplaceAll(viewV1, "1", "2"))
	tree, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	pending := tree.Pending()
	if len(pending) != 2 {
		t.Fatalf("pending %v, want 2", pending)
	}
	for _, f := range pending {
		fsys[f.Path] = file(f.Text)
	}
	if !strings.Contains(pending[1].Text, "\nDROP MATERIALIZED VIEW webhooks.v;\n-- begin sql/src/watch/v.sql") {
		t.Errorf("view migration does not drop the view first:\n%s", pending[1].Text)
	}
	tree, err = Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if p := tree.Problems(); len(p) != 0 {
		t.Errorf("after writing: %q", p)
	}
	if p := tree.Pending(); len(p) != 0 {
		t.Errorf("after writing, still pending: %v", p)
	}
}
