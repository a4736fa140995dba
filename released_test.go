package pginbox

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// releasedLock is the checksum file of the released migrations, in
// sha256sum format with paths relative to the repository root, so that
// `sha256sum -c sql/released.sha256` checks it too. make sql-checksums
// writes it at release time.
const releasedLock = "sql/released.sha256"

var lockLine = regexp.MustCompile(`^([0-9a-f]{64})  (sql/(?:schema|functions|views|checks)/([0-9]{5})_[a-z0-9_]+\.sql)$`)

// checkReleased returns what is wrong with the migrations in fsys (a
// repository root) against the lock file's content: a released file edited,
// renamed or removed, or an unreleased file whose version is at or below the
// last released one (goose would never apply it to a database that already
// has that release, or would apply it out of order).
func checkReleased(fsys fs.FS, lock string) []string {
	var problems []string
	released := map[string]bool{}
	last := -1
	sc := bufio.NewScanner(strings.NewReader(lock))
	for n := 1; sc.Scan(); n++ {
		m := lockLine.FindStringSubmatch(sc.Text())
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: not a \"<sha256>  sql/<folder>/NNNNN_name.sql\" line: %q", releasedLock, n, sc.Text()))
			continue
		}
		sum, name := m[1], m[2]
		v, _ := strconv.Atoi(m[3])
		last = max(last, v)
		released[name] = true
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s was released and is gone (renamed or removed): released migrations never change; add a new one instead", name))
			continue
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			problems = append(problems, fmt.Sprintf("%s was released and has been edited: released migrations never change; restore it and add a new migration instead", name))
		}
	}
	if len(released) == 0 {
		return append(problems, releasedLock+" lists no migration")
	}
	for _, dir := range sqlDirs {
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			problems = append(problems, fmt.Sprintf("read %s: %v", dir, err))
			continue
		}
		for _, e := range entries {
			m := migrationName.FindStringSubmatch(e.Name())
			name := path.Join(dir, e.Name())
			if m == nil || released[name] {
				continue
			}
			if v, _ := strconv.Atoi(m[1]); v <= last {
				problems = append(problems, fmt.Sprintf("%s is not released but its version %05d is at or below the last released version %05d: take %05d or later (make migration)", name, v, last, last+1))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// TestReleasedMigrations: the migrations of released versions are exactly
// the files recorded in sql/released.sha256, and every later migration has a
// higher version than the last released one.
func TestReleasedMigrations(t *testing.T) {
	t.Parallel()
	lock, err := os.ReadFile(releasedLock)
	if err != nil {
		t.Fatalf("read %s (make sql-checksums writes it): %v", releasedLock, err)
	}
	for _, p := range checkReleased(os.DirFS("."), string(lock)) {
		t.Error(p)
	}
}

// TestCheckReleased: checkReleased notices each way a release can be broken.
func TestCheckReleased(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	base := func() fstest.MapFS {
		return fstest.MapFS{
			"sql/schema/00001_create_a.sql":    file("a"),
			"sql/functions/00002_create_b.sql": file("b"),
			"sql/functions/README.md":          file("not a migration"),
			"sql/views/README.md":              file("not a migration"),
			"sql/checks/00003_insert_c.sql":    file("c"),
		}
	}
	lock := sum("a") + "  sql/schema/00001_create_a.sql\n" + sum("b") + "  sql/functions/00002_create_b.sql\n"
	tests := []struct {
		name   string
		change func(fstest.MapFS)
		lock   string
		want   []string // one substring per problem expected, in the order of the sorted problems
	}{
		{"unchanged, a later migration added", func(fstest.MapFS) {}, lock, nil},
		{"released file edited", func(f fstest.MapFS) { f["sql/schema/00001_create_a.sql"] = file("a2") }, lock, []string{"00001_create_a.sql was released and has been edited"}},
		{"released file renamed", func(f fstest.MapFS) {
			f["sql/schema/00001_create_aa.sql"] = f["sql/schema/00001_create_a.sql"]
			delete(f, "sql/schema/00001_create_a.sql")
		}, lock, []string{"00001_create_a.sql was released and is gone", "00001_create_aa.sql is not released but its version 00001 is at or below"}},
		{"released file removed", func(f fstest.MapFS) { delete(f, "sql/functions/00002_create_b.sql") }, lock, []string{"00002_create_b.sql was released and is gone"}},
		{"new file at a released version", func(f fstest.MapFS) { f["sql/views/00002_create_view_v.sql"] = file("v") }, lock,
			[]string{"00002_create_view_v.sql is not released but its version 00002 is at or below the last released version 00002"}},
		{"new file below the last released version", func(f fstest.MapFS) { f["sql/checks/00000_insert_z.sql"] = file("z") }, lock,
			[]string{"version 00000 is at or below the last released version 00002"}},
		{"empty lock", func(fstest.MapFS) {}, "", []string{"lists no migration"}},
		{"malformed lock line", func(fstest.MapFS) {}, lock + "nonsense\n", []string{"not a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fsys := base()
			tt.change(fsys)
			got := checkReleased(fsys, tt.lock)
			ok := len(got) == len(tt.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.Contains(got[i], tt.want[i])
			}
			if !ok {
				t.Fatalf("problems %q, want one for each of %q", got, tt.want)
			}
		})
	}
}
