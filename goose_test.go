package pginbox

import (
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
		if i > 0 && n[:5] <= names[i-1][:5] {
			t.Fatalf("%s follows %s: versions must be unique and increasing", n, names[i-1])
		}
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "-- +goose Up") || !strings.Contains(string(data), "-- +goose Down") {
			t.Errorf("%s lacks goose Up/Down annotations", n)
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
