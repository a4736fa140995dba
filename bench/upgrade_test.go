package main

import (
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pginbox/pginbox"
)

// TestVersionBeforeStorageV2: the upgrade scenario's v0.2 database stops at
// the migration just before the one that creates webhooks.keys, and that
// one exists after it.
func TestVersionBeforeStorageV2(t *testing.T) {
	t.Parallel()
	v, err := versionBeforeStorageV2()
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := pginbox.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	for i, name := range names {
		if n, _ := strconv.ParseInt(name[:5], 10, 64); n == v {
			body, err := fs.ReadFile(fsys, names[i+1])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(body), "CREATE TABLE webhooks.keys (") {
				t.Fatalf("the migration after %d, %s, does not create webhooks.keys", v, names[i+1])
			}
			return
		}
	}
	t.Fatalf("no migration %05d", v)
}
