package pginbox

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func TestMigrationsFlattened(t *testing.T) {
	t.Parallel()
	fsys, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 10 {
		t.Fatalf("only %d migrations at the root of the flattened fs", len(names))
	}
	for i, n := range names {
		// One contiguous sequence: make migration takes the next number.
		if want := fmt.Sprintf("%05d_", i+1); !strings.HasPrefix(n, want) {
			t.Fatalf("%s is migration number %d: versions must run 00001, 00002, ... without holes", n, i+1)
		}
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "-- +goose Up") {
			t.Errorf("%s lacks its -- +goose Up annotation", n)
		}
		// Forward-only (sql/README.md): a Down section no test runs is untested SQL.
		if strings.Contains(string(data), "-- +goose Down") {
			t.Errorf("%s has a -- +goose Down section: migrations are forward-only", n)
		}
	}
}

func TestFlattenRejects(t *testing.T) {
	t.Parallel()
	ok := &fstest.MapFile{Data: []byte("-- +goose Up\n")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want string
	}{
		{"duplicate version across folders", fstest.MapFS{
			"sql/schema/00001_create_a.sql":    ok,
			"sql/functions/00001_create_b.sql": ok,
		}, "share version 1"},
		{"misnamed file", fstest.MapFS{
			"sql/schema/1_create_a.sql": ok,
		}, "name must be NNNNN_verb_object.sql"},
		{"no migrations", fstest.MapFS{
			"sql/schema/README.md": ok,
		}, "no .sql files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, d := range []string{"sql/schema", "sql/functions"} {
				if _, ok := tc.fsys[d+"/.keep"]; !ok {
					tc.fsys[d+"/.keep"] = &fstest.MapFile{}
				}
			}
			_, err := flatten(tc.fsys, []string{"sql/schema", "sql/functions"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("flatten: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestLatestVersion: the newest embedded file's number, the same on every call.
func TestLatestVersion(t *testing.T) {
	t.Parallel()
	names, err := MigrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(names)) // versions run 1..n without holes (TestMigrationsFlattened)
	for range 2 {
		got, err := LatestVersion()
		if err != nil || got != want {
			t.Fatalf("LatestVersion() = %d, %v; want %d (%s)", got, err, want, names[len(names)-1])
		}
	}
	if _, err := versionOf("1_create_a.sql"); err == nil {
		t.Fatal("versionOf accepted a misnamed file")
	}
}
