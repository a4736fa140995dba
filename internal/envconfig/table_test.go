package envconfig

import (
	"strings"
	"testing"
)

// TestTable: every row is well formed: one row per variable and per flag,
// a flag named after its variable (--keep-payload for PGINBOX_KEEP_PAYLOAD),
// a default that reads and passes the row's rule, a doc line, and a Field or
// Builds for every row but the command's own.
func TestTable(t *testing.T) {
	t.Parallel()
	envs, flags := map[string]bool{}, map[string]bool{}
	for _, s := range Table {
		name := s.Env
		if name == "" {
			name = s.Field
		}
		t.Run(name, func(t *testing.T) {
			if s.Env != "" && envs[s.Env] || s.Flag != "" && flags[s.Flag] {
				t.Fatal("declared twice")
			}
			envs[s.Env], flags[s.Flag] = s.Env != "", s.Flag != ""
			if s.Doc == "" || strings.Contains(s.Doc, "\n") {
				t.Errorf("doc %q, want one line", s.Doc)
			}
			if s.Flag != "" && s.Flag != strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.Env, "PGINBOX_")), "_", "-") {
				t.Errorf("flag --%s, want the variable's name in lower case with - for _", s.Flag)
			}
			if s.Family() && (s.Flag != "" || s.Default != "" || s.Field != "") {
				t.Error("a family has no flag, default or Field of its own")
			}
			if s.Env == "" && s.Field == "" {
				t.Error("neither a variable nor a Config field")
			}
			if s.Default != "" {
				if _, msg := s.kind.read(s.Default); msg != "" {
					t.Errorf("default: %s", msg)
				}
			}
			if s.OldNameOf != "" {
				if n, ok := Lookup(s.OldNameOf); !ok || n.Field != s.Field {
					t.Errorf("old name of %s, which sets %q", s.OldNameOf, n.Field)
				}
			}
		})
	}
	if len(Command())+len(Runner()) != len(Table) {
		t.Fatalf("%d command rows and %d runner rows, want %d in all", len(Command()), len(Runner()), len(Table))
	}
}
