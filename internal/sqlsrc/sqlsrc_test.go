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

// releasing writes sql/released.sha256 listing paths (sqlsrc reads the
// paths, not the checksums).
func releasing(f fstest.MapFS, paths ...string) {
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(strings.Repeat("0", 64) + "  " + p + "\n")
	}
	f[ReleasedFile] = file(b.String())
}

// fnTwo is webhooks.f with a second argument: another signature.
const fnTwo = `CREATE OR REPLACE FUNCTION webhooks.f(x int, y int) RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;
COMMENT ON FUNCTION webhooks.f(int, int) IS 'f';
`

// plpgsqlF is webhooks.f in plpgsql, naming webhooks.u, whose body Postgres
// resolves only when it runs.
const plpgsqlF = `-- +goose StatementBegin
CREATE OR REPLACE FUNCTION webhooks.f(x int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT count(*) FROM webhooks.u);
END;
$$;
-- +goose StatementEnd
COMMENT ON FUNCTION webhooks.f(int) IS 'f';
`

const trigger = "CREATE OR REPLACE TRIGGER t_f AFTER INSERT ON webhooks.t EXECUTE FUNCTION webhooks.f();\n"

// TestPendingFolds: an edited source is folded into its newest migration,
// rewritten between its begin and end lines with every hand-written step
// before and after them kept, while that migration is unreleased and was
// written by the generator and the source names nothing a later migration
// creates; otherwise the next migration is added. Either way the tree is in
// step once the files are written: Problems and Pending are empty.
func TestPendingFolds(t *testing.T) {
	t.Parallel()
	const f3 = "sql/functions/00003_replace_function_f.sql"
	fSrc := "sql/src/process/f.sql"
	// unreleased: released up to 00002, so 00003 to 00006 are not.
	unreleased := func(f fstest.MapFS) {
		releasing(f, "sql/schema/00001_create_table_t.sql", "sql/functions/00002_create_function_f.sql")
	}
	fnV3 := strings.ReplaceAll(fnV2, "2", "3")
	for _, tc := range []struct {
		name string
		edit func(fstest.MapFS)
		path string // the one file due
		fold bool
		why  string // a substring of File.Why
		note string // a substring of File.Note; "" for none
		text string // the file's whole text once written; "" to skip
	}{
		{
			name: "fold into the unreleased migration",
			edit: func(f fstest.MapFS) { unreleased(f); f[fSrc] = file(fnV3) },
			path: f3, fold: true, why: "unreleased",
			text: generated(fSrc, "")[:len(upLine)+1] + header(fSrc) + fnV3 + "-- end " + fSrc + "\n",
		},
		{
			name: "a new migration after a released one",
			edit: func(f fstest.MapFS) { releasing(f, f3); f[fSrc] = file(fnV3) },
			path: "sql/functions/00007_replace_function_f.sql", why: f3 + " is released",
		},
		{
			name: "released by version: at or below the last released, listed or not",
			edit: func(f fstest.MapFS) {
				releasing(f, "sql/checks/00004_insert_checks_latency.sql")
				f[fSrc] = file(fnV3)
			},
			path: "sql/functions/00007_replace_function_f.sql", why: f3 + " is released",
		},
		{
			name: "without sql/released.sha256 every migration counts as released",
			edit: func(f fstest.MapFS) { f[fSrc] = file(fnV3) },
			path: "sql/functions/00007_replace_function_f.sql", why: f3 + " is released",
		},
		{
			name: "hand-written steps before the begin line and after the end line are kept",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f[f3] = file(upLine + "\n-- Why this step.\nSELECT 1;\n" + header(fSrc) + fnV2 + "-- end " + fSrc + "\nSELECT 2;\n")
				f[fSrc] = file(fnV3)
			},
			path: f3, fold: true,
			text: upLine + "\n-- Why this step.\nSELECT 1;\n" + header(fSrc) + fnV3 + "-- end " + fSrc + "\nSELECT 2;\n",
		},
		{
			name: "an unreleased migration written by hand (no begin and end lines) is not rewritten",
			edit: func(f fstest.MapFS) { unreleased(f); f[f3] = file(upLine + "\n" + fnV2); f[fSrc] = file(fnV3) },
			path: "sql/functions/00007_replace_function_f.sql", why: "written by hand",
		},
		{
			name: "asked for a new migration (-new)",
			edit: func(f fstest.MapFS) { unreleased(f); f[fSrc] = file(fnV3) },
			path: "sql/functions/00007_replace_function_f.sql", why: "-new",
		},
		{
			name: "a view keeps the DROP before its begin line",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/views/00007_replace_view_v.sql"] = file(upLine + "\nDROP MATERIALIZED VIEW webhooks.v;\n" +
					header("sql/src/watch/v.sql") + viewV1 + "-- end sql/src/watch/v.sql\n")
				f["sql/src/watch/v.sql"] = file(strings.ReplaceAll(viewV1, "1", "2"))
			},
			path: "sql/views/00007_replace_view_v.sql", fold: true,
			text: upLine + "\nDROP MATERIALIZED VIEW webhooks.v;\n" + header("sql/src/watch/v.sql") +
				strings.ReplaceAll(viewV1, "1", "2") + "-- end sql/src/watch/v.sql\n",
		},
		{
			name: "checks fold",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/checks/00004_insert_checks_latency.sql"] = file(generated("sql/src/watch/checks_latency.sql", "INSERT INTO webhooks.checks VALUES ('a');\n"))
				f["sql/src/watch/checks_latency.sql"] = file("INSERT INTO webhooks.checks VALUES ('b');\n")
			},
			path: "sql/checks/00004_insert_checks_latency.sql", fold: true,
		},
		{
			name: "a function and the trigger after it in its file fold as one",
			edit: func(f fstest.MapFS) { unreleased(f); f[fSrc] = file(fnV3 + trigger) },
			path: f3, fold: true,
			text: upLine + "\n" + header(fSrc) + fnV3 + trigger + "-- end " + fSrc + "\n",
		},
		{
			name: "a function rewritten at run time folds with the statement that publishes it again",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/src/order/p.sql"] = file(publisher)
				f["sql/functions/00007_create_function_p.sql"] = file(generated("sql/src/order/p.sql", publisher))
				f[fSrc] = file(fnV3 + "UPDATE webhooks.t SET x = x;\n")
			},
			path: f3, fold: true,
			text: upLine + "\n" + header(fSrc) + fnV3 + "UPDATE webhooks.t SET x = x;\n-- end " + fSrc + "\n",
		},
		{
			name: "a new signature over a released one: the old one is left to drop by hand",
			edit: func(f fstest.MapFS) { unreleased(f); f[fSrc] = file(fnTwo) },
			path: f3, fold: true,
			note: "sql/src/process/f.sql defines webhooks.f(int,int) where sql/functions/00002_create_function_f.sql defined webhooks.f(int)",
		},
		{
			name: "a new signature, the old one already dropped after the end line",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f[f3] = file(generated(fSrc, strings.NewReplacer("y int", "y text", "int, int", "int, text").Replace(fnTwo)) + "DROP FUNCTION webhooks.f(int);\n")
				f[fSrc] = file(fnTwo)
			},
			path: f3, fold: true,
		},
		{
			name: "back to the released signature while the migration drops it",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f[f3] = file(generated(fSrc, fnTwo) + "DROP FUNCTION webhooks.f(int);\n")
				f[fSrc] = file(fnV3)
			},
			path: f3, fold: true,
			note: f3 + " drops webhooks.f(int) after its end line, the signature sql/src/process/f.sql now defines: remove that step",
		},
		{
			name: "a new signature of a function created in this release needs nothing",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				g := strings.ReplaceAll(fnV1, "webhooks.f", "webhooks.g")
				f["sql/src/admin/g.sql"] = file(g)
				f["sql/functions/00007_create_function_g.sql"] = file(upLine + "\n-- GRANT by hand: webhooks.g(int)\n" +
					header("sql/src/admin/g.sql") + g + "-- end sql/src/admin/g.sql\n")
				f["sql/src/admin/g.sql"] = file(strings.ReplaceAll(fnTwo, "webhooks.f", "webhooks.g"))
			},
			path: "sql/functions/00007_create_function_g.sql", fold: true,
			note: "the hand-written steps of sql/functions/00007_create_function_g.sql name webhooks.g(int), which it no longer defines",
		},
		{
			name: "a LANGUAGE sql function naming a table a later migration creates: new",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/schema/00007_create_table_u.sql"] = file(upLine + "\nCREATE TABLE webhooks.u ();\n")
				f[fSrc] = file(strings.ReplaceAll(fnV2, "SELECT 2", "SELECT count(*) FROM webhooks.u"))
			},
			path: "sql/functions/00008_replace_function_f.sql",
			why:  "names webhooks.u, which sql/schema/00007_create_table_u.sql creates after " + f3,
		},
		{
			name: "a plpgsql function naming a table a later migration creates: fold",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/schema/00007_create_table_u.sql"] = file(upLine + "\nCREATE TABLE webhooks.u ();\n")
				f[fSrc] = file(plpgsqlF)
			},
			path: f3, fold: true,
		},
		{
			name: "a plpgsql function naming a later table in a comment or its COMMENT ON: fold",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/schema/00007_create_table_u.sql"] = file(upLine + "\nCREATE TABLE webhooks.u ();\n")
				f[fSrc] = file("-- reads webhooks.u\n" + strings.ReplaceAll(fnV2, "IS 'f'", "IS 'f, as webhooks.u'"))
			},
			path: f3, fold: true,
		},
		{
			name: "a view naming a table a later migration renames another to: new",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/schema/00007_rename_table_t.sql"] = file(upLine + "\nALTER TABLE webhooks.t RENAME TO u;\n")
				f["sql/src/watch/v.sql"] = file(strings.ReplaceAll(viewV1, "SELECT 1", "SELECT 1 FROM webhooks.u"))
			},
			path: "sql/views/00008_replace_view_v.sql",
			why:  "names webhooks.u, which sql/schema/00007_rename_table_t.sql creates after sql/views/00005_create_view_v.sql",
		},
		{
			name: "a trigger on a table a later migration creates: new",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				f["sql/schema/00007_create_table_u.sql"] = file(upLine + "\nCREATE TABLE webhooks.u ();\n")
				f[fSrc] = file(plpgsqlF + strings.ReplaceAll(trigger, "webhooks.t", "webhooks.u"))
			},
			path: "sql/functions/00008_replace_function_f.sql",
			why:  "names webhooks.u, which sql/schema/00007_create_table_u.sql creates after " + f3,
		},
		{
			name: "a file that runs a statement naming a function a later migration creates: new",
			edit: func(f fstest.MapFS) {
				unreleased(f)
				g := strings.ReplaceAll(fnV1, "webhooks.f", "webhooks.g")
				f["sql/src/admin/g.sql"] = file(g)
				f["sql/functions/00007_create_function_g.sql"] = file(generated("sql/src/admin/g.sql", g))
				f[fSrc] = file(plpgsqlF + "SELECT webhooks.g(1);\n")
			},
			path: "sql/functions/00008_replace_function_f.sql",
			why:  "names webhooks.g, which sql/functions/00007_create_function_g.sql creates after " + f3,
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
			tree.AddOnly = strings.Contains(tc.name, "-new")
			pending := tree.Pending()
			if len(pending) != 1 {
				t.Fatalf("pending %v, want one file", pending)
			}
			got := pending[0]
			if got.Path != tc.path || got.Fold != tc.fold {
				t.Errorf("pending %s (fold %v), want %s (fold %v)", got.Path, got.Fold, tc.path, tc.fold)
			}
			if !strings.Contains(got.Why, tc.why) {
				t.Errorf("why %q, want it to contain %q", got.Why, tc.why)
			}
			if (tc.note == "") != (got.Note == "") || !strings.Contains(got.Note, tc.note) {
				t.Errorf("note %q, want %q", got.Note, tc.note)
			}
			if tc.text != "" && got.Text != tc.text {
				t.Errorf("text:\n%s\nwant:\n%s", got.Text, tc.text)
			}
			fsys[got.Path] = file(got.Text)
			if tree, err = Load(fsys); err != nil {
				t.Fatal(err)
			}
			if p := tree.Problems(); len(p) != 0 {
				t.Errorf("after writing: %q", p)
			}
			if p := tree.Pending(); len(p) != 0 {
				t.Errorf("after writing, still pending: %v", p)
			}
		})
	}
}

// TestPendingTwoObjectsInOneFile: a file that defines two functions maps to
// no object (a problem), so nothing is folded into the migration of either.
func TestPendingTwoObjectsInOneFile(t *testing.T) {
	t.Parallel()
	fsys := checkout()
	releasing(fsys, "sql/schema/00001_create_table_t.sql")
	fsys["sql/src/process/f.sql"] = file(fnV2 + strings.ReplaceAll(fnV2, "webhooks.f", "webhooks.h"))
	tree, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if p := tree.Pending(); len(p) != 0 {
		t.Errorf("pending %v, want none", p)
	}
	if p := tree.Problems(); len(p) == 0 {
		t.Error("no problem for a file with two functions")
	}
}

// TestReleasedFileMalformed: a line of sql/released.sha256 that is not a
// checksum and a migration's path is a problem.
func TestReleasedFileMalformed(t *testing.T) {
	t.Parallel()
	fsys := checkout()
	fsys[ReleasedFile] = file("not a line\n")
	tree, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if p := tree.Problems(); len(p) != 1 || !strings.Contains(p[0], "sql/released.sha256:1: not a") {
		t.Errorf("problems %q, want the malformed line", p)
	}
}

// TestReport: what make sql-migrations prints for a file, with -n (due:)
// and without, for a fold and a new migration, with a note on a line of
// its own.
func TestReport(t *testing.T) {
	t.Parallel()
	fold := File{Path: "sql/functions/00003_replace_function_f.sql", Source: "sql/src/process/f.sql", Fold: true,
		Why: "unreleased, rewritten between its begin and end lines"}
	add := File{Path: "sql/functions/00007_replace_function_f.sql", Source: "sql/src/process/f.sql",
		Why: "sql/functions/00003_replace_function_f.sql is released", Note: "drop it"}
	for _, tc := range []struct {
		name   string
		f      File
		dryRun bool
		want   string
	}{
		{"fold, -n", fold, true, "due: sql/functions/00003_replace_function_f.sql (fold: unreleased, rewritten between its begin and end lines)"},
		{"fold", fold, false, "folded sql/src/process/f.sql into sql/functions/00003_replace_function_f.sql (unreleased, rewritten between its begin and end lines)"},
		{"new, -n", add, true, "due: sql/functions/00007_replace_function_f.sql (new: sql/functions/00003_replace_function_f.sql is released)\n  note: drop it"},
		{"new", add, false, "wrote sql/functions/00007_replace_function_f.sql (new: sql/functions/00003_replace_function_f.sql is released)\n  note: drop it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.f.Report(tc.dryRun); got != tc.want {
				t.Errorf("Report(%v) = %q, want %q", tc.dryRun, got, tc.want)
			}
		})
	}
}
