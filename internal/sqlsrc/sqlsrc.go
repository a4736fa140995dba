// Package sqlsrc keeps the canonical SQL sources and the goose migrations in
// step.
//
// The current definition of every function, view and family of checks lives
// in one file, sql/src/<concern>/<object>.sql, with its COMMENT ON, REVOKE and
// grants. The migrations under sql/functions, sql/views and sql/checks are
// named for the object they define (NNNNN_create_function_<object>.sql,
// NNNNN_replace_view_<object>.sql, NNNNN_update_checks_<family>.sql, ...),
// and the newest one of each object must hold the source's text: verbatim
// after its "-- +goose Up" line (the files released before sql/src existed),
// or between the begin and end lines [Tree.Pending] writes around it.
// [Tree.Problems] says where they disagree; [Tree.Pending] returns the
// migrations that bring them back in step: the object's newest migration
// rewritten between its begin and end lines while it is unreleased (not in
// sql/released.sha256), or the next migration.
package sqlsrc

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kind is what a source or migration defines.
type Kind int

// The kinds of object a source defines.
const (
	Function Kind = iota + 1
	View
	Checks
)

// String returns the word the migration names use for the kind.
func (k Kind) String() string {
	switch k {
	case Function:
		return "function"
	case View:
		return "view"
	case Checks:
		return "checks"
	}
	return "unknown"
}

// dir is the migration folder of a kind.
func (k Kind) dir() string {
	switch k {
	case Function:
		return "sql/functions"
	case View:
		return "sql/views"
	}
	return "sql/checks"
}

// SrcDir is the folder of the canonical sources, one subfolder per concern.
const SrcDir = "sql/src"

// upLine opens every migration.
const upLine = "-- +goose Up"

// Source is one canonical file.
type Source struct {
	Path string // sql/src/<concern>/<object>.sql
	Key  string // <object>: the file name without .sql
	Kind Kind
	Text string
}

// Migration is one migration file that defines a function, view or checks.
type Migration struct {
	Path      string // sql/functions/00091_replace_function_claim.sql
	Version   int
	Key       string // claim
	Kind      Kind
	Generated bool   // holds begin/end lines around its source's text
	Body      string // the source's text as this migration states it
	// Released: sql/released.sha256 lists the file, or its version is at or
	// below the last one listed (every migration counts as released in a
	// checkout without that file).
	Released bool
	text     string // the whole file
}

// Tree is the sources and migrations of one checkout.
type Tree struct {
	Sources    []Source
	Migrations []Migration // functions, views and checks, by version
	// Latest is the highest version of any migration, schema included.
	Latest int
	// AddOnly makes Pending add the next migration for every source due,
	// folding none (make sql-migrations NEW=1).
	AddOnly  bool
	schema   []change // what the migrations of sql/schema create
	released released
	problems []string
}

var (
	versionName = regexp.MustCompile(`^([0-9]{5})_[a-z0-9_]+\.sql$`)
	objectNames = map[string]*regexp.Regexp{
		"sql/functions": regexp.MustCompile(`^[0-9]{5}_(create|replace)_function_([a-z0-9_]+)\.sql$`),
		"sql/views":     regexp.MustCompile(`^[0-9]{5}_(create|replace)_view_([a-z0-9_]+)\.sql$`),
		"sql/checks":    regexp.MustCompile(`^[0-9]{5}_(insert|update)_(checks_[a-z0-9_]+)\.sql$`),
	}
	dirKinds  = map[string]Kind{"sql/functions": Function, "sql/views": View, "sql/checks": Checks}
	srcName   = regexp.MustCompile(`^sql/src/[a-z]+/([a-z0-9_]+)\.sql$`)
	createFn  = regexp.MustCompile(`(?im)^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+webhooks\.([a-z0-9_]+)\s*\(`)
	createVw  = regexp.MustCompile(`(?im)^CREATE\s+(?:OR\s+REPLACE\s+)?(MATERIALIZED\s+)?VIEW\s+webhooks\.([a-z0-9_]+)\b`)
	commentOn = regexp.MustCompile(`(?im)^COMMENT\s+ON\s+(FUNCTION|VIEW|MATERIALIZED\s+VIEW)\s+(webhooks\.[a-z0-9_]+(?:\([^)]*\))?)\s+IS`)
	insertChk = regexp.MustCompile(`(?im)^INSERT\s+INTO\s+webhooks\.checks\b`)
	beginLine = regexp.MustCompile(`(?m)^-- begin (sql/src/[a-z]+/[a-z0-9_]+\.sql)\b.*\n`)
	endLine   = regexp.MustCompile(`(?m)^-- end (sql/src/[a-z]+/[a-z0-9_]+\.sql)\n`)
	// rewritten finds a function a source writes with dynamic SQL (CREATE OR
	// REPLACE FUNCTION inside a string literal, as _ordering_publish writes
	// _ordered_providers): its body is state written at run time.
	rewritten = regexp.MustCompile(`(?i)'\s*CREATE\s+OR\s+REPLACE\s+FUNCTION\s+webhooks\.([a-z0-9_]+)`)
	// republish finds a statement that writes state back after a function's
	// definition: a data statement or a DO block.
	republish  = regexp.MustCompile(`(?im)^(UPDATE|INSERT|SELECT|PERFORM|DO)\b`)
	stmtEndTag = "-- +goose StatementEnd"
)

// Load reads the sources under sql/src and the migrations under sql/ of
// fsys, a checkout's root. A misnamed or unreadable file is a problem, not
// an error; an error means fsys could not be read at all.
func Load(fsys fs.FS) (*Tree, error) {
	t := &Tree{}
	if err := t.readReleased(fsys); err != nil {
		return nil, err
	}
	srcs, err := fs.Glob(fsys, SrcDir+"/*/*.sql")
	if err != nil {
		return nil, fmt.Errorf("sqlsrc: %w", err)
	}
	for _, p := range srcs {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("sqlsrc: read %s: %w", p, err)
		}
		t.addSource(p, string(data))
	}
	for _, dir := range []string{"sql/schema", "sql/functions", "sql/views", "sql/checks"} {
		names, err := fs.Glob(fsys, dir+"/*.sql")
		if err != nil {
			return nil, fmt.Errorf("sqlsrc: %w", err)
		}
		for _, p := range names {
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return nil, fmt.Errorf("sqlsrc: read %s: %w", p, err)
			}
			t.addMigration(dir, p, string(data))
		}
	}
	sort.Slice(t.Migrations, func(i, j int) bool { return t.Migrations[i].Version < t.Migrations[j].Version })
	return t, nil
}

func (t *Tree) problemf(format string, args ...any) {
	t.problems = append(t.problems, fmt.Sprintf(format, args...))
}

// kindOf tells what a source's text defines: 0 when it defines nothing this
// package knows, or more than one object.
func kindOf(text string) (Kind, string) {
	fns, vws := createFn.FindAllStringSubmatch(text, -1), createVw.FindAllStringSubmatch(text, -1)
	switch {
	case len(fns) == 1 && len(vws) == 0:
		return Function, fns[0][1]
	case len(vws) == 1 && len(fns) == 0:
		return View, vws[0][2]
	case len(fns) == 0 && len(vws) == 0 && insertChk.MatchString(text):
		return Checks, ""
	}
	return 0, ""
}

func (t *Tree) addSource(p, text string) {
	m := srcName.FindStringSubmatch(p)
	if m == nil {
		t.problemf("%s: a source is named sql/src/<concern>/<object>.sql", p)
		return
	}
	s := Source{Path: p, Key: m[1], Text: text}
	kind, name := kindOf(text)
	switch {
	case kind == 0:
		t.problemf("%s: a source defines exactly one function or view (CREATE ... webhooks.<name>), or one family of checks (INSERT INTO webhooks.checks)", p)
		return
	case kind == Checks && !strings.HasPrefix(s.Key, "checks_"):
		t.problemf("%s: a family of checks is named checks_<family>.sql", p)
		return
	case kind != Checks && s.Key != name && !strings.HasPrefix(s.Key, name+"_"):
		t.problemf("%s: defines webhooks.%s; name the file for it (%s.sql, or %s_<variant>.sql for an overload)", p, name, name, name)
		return
	}
	s.Kind = kind
	if kind != Checks && len(commentOn.FindAllString(text, -1)) != 1 {
		t.problemf("%s: needs exactly one COMMENT ON for its %s", p, kind)
	}
	if !strings.HasSuffix(text, "\n") {
		t.problemf("%s: must end with a newline", p)
	}
	t.Sources = append(t.Sources, s)
}

func (t *Tree) addMigration(dir, p, text string) {
	base := path.Base(p)
	vm := versionName.FindStringSubmatch(base)
	if vm == nil {
		t.problemf("%s: a migration is named NNNNN_verb_object.sql", p)
		return
	}
	v, _ := strconv.Atoi(vm[1])
	t.Latest = max(t.Latest, v)
	re, ok := objectNames[dir]
	if !ok {
		// sql/schema: tables, indexes and privileges, no sources. A function
		// or view created there would have none.
		if fn := createFn.FindStringSubmatch(text); fn != nil {
			t.problemf("%s: creates function webhooks.%s: functions live in sql/src and sql/functions", p, fn[1])
		}
		if vw := createVw.FindStringSubmatch(text); vw != nil {
			t.problemf("%s: creates view webhooks.%s: views live in sql/src and sql/views", p, vw[2])
		}
		t.schema = append(t.schema, schemaChange(p, v, text))
		return
	}
	m := re.FindStringSubmatch(base)
	if m == nil {
		t.problemf("%s: a migration of %s is named NNNNN_%s", p, dir, map[string]string{
			"sql/functions": "create|replace_function_<object>.sql",
			"sql/views":     "create|replace_view_<object>.sql",
			"sql/checks":    "insert|update_checks_<family>.sql",
		}[dir])
		return
	}
	mig := Migration{Path: p, Version: v, Key: m[2], Kind: dirKinds[dir], Released: t.released.has(p, v), text: text}
	mig.Body, mig.Generated = body(text)
	if mig.Body == "" {
		t.problemf("%s: does not open with %q, or its begin and end lines do not pair", p, upLine)
		return
	}
	t.Migrations = append(t.Migrations, mig)
}

// body returns the source text a migration states: what lies between its
// begin and end lines when it has them (generated), otherwise everything
// after its first line, "-- +goose Up". It returns "" for a file that has
// neither form.
func body(text string) (string, bool) {
	if !strings.HasPrefix(text, upLine+"\n") {
		return "", false
	}
	b, e, ok := markers(text)
	switch {
	case !ok:
		return "", false
	case b == nil:
		return strings.TrimPrefix(text, upLine+"\n"), false
	}
	return text[b[1]:e[0]], true
}

// markers returns the positions (as regexp submatch indexes) of a
// migration's begin and end lines: nil, nil, true when it has neither, and
// false when they do not pair (one of them twice or missing, the end before
// the begin, or two different sources named).
func markers(text string) (begin, end []int, ok bool) {
	b, e := beginLine.FindAllStringSubmatchIndex(text, -1), endLine.FindAllStringSubmatchIndex(text, -1)
	if len(b) == 0 && len(e) == 0 {
		return nil, nil, true
	}
	if len(b) != 1 || len(e) != 1 || e[0][0] < b[0][1] ||
		text[b[0][2]:b[0][3]] != text[e[0][2]:e[0][3]] {
		return nil, nil, false
	}
	return b[0], e[0], true
}

// Newest returns the newest migration of the object key, and whether it has
// one.
func (t *Tree) Newest(key string) (Migration, bool) {
	for i := len(t.Migrations) - 1; i >= 0; i-- {
		if t.Migrations[i].Key == key {
			return t.Migrations[i], true
		}
	}
	return Migration{}, false
}

// Problems lists where the sources and the migrations disagree, or a file
// breaks the layout; nil when they are in step. Each problem names the file
// to fix and, where the generator fixes it, says so.
func (t *Tree) Problems() []string {
	out := append([]string(nil), t.problems...)
	byKey := map[string]Source{}
	defines := map[string]string{} // COMMENT ON target -> source
	for _, s := range t.Sources {
		if prev, ok := byKey[s.Key]; ok {
			out = append(out, fmt.Sprintf("%s and %s: two sources define %s", prev.Path, s.Path, s.Key))
			continue
		}
		byKey[s.Key] = s
		for _, m := range commentOn.FindAllStringSubmatch(s.Text, -1) {
			target := strings.Join(strings.Fields(m[2]), "")
			if prev, ok := defines[target]; ok {
				out = append(out, fmt.Sprintf("%s and %s: two sources define %s", prev, s.Path, m[2]))
			}
			defines[target] = s.Path
		}
		newest, ok := t.Newest(s.Key)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s has no migration: run make sql-migrations", s.Path))
		case newest.Kind != s.Kind:
			out = append(out, fmt.Sprintf("%s defines a %s but %s a %s", s.Path, s.Kind, newest.Path, newest.Kind))
		case newest.Body != s.Text:
			out = append(out, fmt.Sprintf("%s differs from its newest migration %s: run make sql-migrations", s.Path, newest.Path))
		}
	}
	for _, s := range t.Sources {
		for _, m := range rewritten.FindAllStringSubmatch(s.Text, -1) {
			target, ok := byKey[m[1]]
			if !ok || target.Kind != Function {
				continue
			}
			if !republishes(target.Text) {
				out = append(out, fmt.Sprintf("%s: webhooks.%s is rewritten at run time (%s writes it), so every migration "+
					"written from this file replaces what was published with the body here: end the file with the statement "+
					"that publishes it again (an UPDATE, INSERT, SELECT, PERFORM or DO after the function)", target.Path, m[1], s.Path))
			}
		}
	}
	seen := map[string]bool{}
	for _, m := range t.Migrations {
		if _, ok := byKey[m.Key]; !ok && !seen[m.Key] {
			out = append(out, fmt.Sprintf("%s: no source sql/src/<concern>/%s.sql holds the current %s", m.Path, m.Key, m.Kind))
		}
		seen[m.Key] = true
	}
	sort.Strings(out)
	return out
}

// republishes says whether a function's source text writes state back after
// the function's definition (after its last StatementEnd line, or its CREATE
// line when it has none).
func republishes(text string) bool {
	rest := text
	if i := strings.LastIndex(text, stmtEndTag); i >= 0 {
		rest = text[i+len(stmtEndTag):]
	} else if loc := createFn.FindStringIndex(text); loc != nil {
		rest = text[loc[1]:]
	}
	return republish.MatchString(rest)
}
