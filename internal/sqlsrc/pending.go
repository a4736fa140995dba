package sqlsrc

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ReleasedFile lists the released migrations, one "<sha256>  <path>" line
// each (make sql-checksums writes it at release time).
const ReleasedFile = "sql/released.sha256"

var (
	releasedLine = regexp.MustCompile(`^[0-9a-f]{64}  (sql/[a-z]+/([0-9]{5})_[a-z0-9_]+\.sql)$`)
	// schemaObject finds what a migration of sql/schema creates, and
	// renamedTo what it renames a table to.
	schemaObject = regexp.MustCompile(`(?im)^\s*CREATE\s+(?:UNLOGGED\s+)?(?:TABLE|VIEW|MATERIALIZED\s+VIEW|SEQUENCE|TYPE|DOMAIN)\s+` +
		`(?:IF\s+NOT\s+EXISTS\s+)?webhooks\.([a-z0-9_]+)`)
	renamedTo = regexp.MustCompile(`(?i)\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?webhooks\.[a-z0-9_]+\s+RENAME\s+TO\s+([a-z0-9_]+)`)
	// sqlBody finds a function in LANGUAGE sql, whose body Postgres checks
	// against the catalog when it is created; runs finds a statement a
	// source runs when its migration is applied (a plpgsql body is indented).
	sqlBody = regexp.MustCompile(`(?i)\bLANGUAGE\s+sql\b`)
	runs    = regexp.MustCompile(`(?im)^(UPDATE|INSERT|SELECT|PERFORM|DO|CALL|GRANT|LOCK|CREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER)\b`)
	// prose is what names nothing Postgres resolves: a comment, a COMMENT ON
	// (other literals stay: dynamic SQL names what it runs).
	prose = regexp.MustCompile(`(?ims)--[^\n]*|^COMMENT\s+ON\b.*?'\s*;\s*$`)
)

// released is what sql/released.sha256 says: the files it lists, up to
// version upTo. Without that file (known false) every migration counts as
// released.
type released struct {
	known bool
	upTo  int
	files map[string]bool
}

// has says whether the migration at p, of version v, is released.
func (r released) has(p string, v int) bool {
	return !r.known || r.files[p] || v <= r.upTo
}

// readReleased reads sql/released.sha256 if fsys has it.
func (t *Tree) readReleased(fsys fs.FS) error {
	data, err := fs.ReadFile(fsys, ReleasedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlsrc: read %s: %w", ReleasedFile, err)
	}
	t.released = released{known: true, files: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		m := releasedLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.problemf("%s:%d: not a \"<sha256>  sql/<folder>/NNNNN_name.sql\" line", ReleasedFile, n)
			continue
		}
		v, _ := strconv.Atoi(m[2])
		t.released.files[m[1]] = true
		t.released.upTo = max(t.released.upTo, v)
	}
	return nil
}

// change is what one migration creates or changes, by name (webhooks.<name>).
type change struct {
	Path    string
	Version int
	Names   []string
}

// schemaChange reads the tables, views, types and sequences a migration of
// sql/schema creates or renames a table to.
func schemaChange(p string, v int, text string) change {
	c := change{Path: p, Version: v}
	for _, re := range []*regexp.Regexp{schemaObject, renamedTo} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			c.Names = append(c.Names, m[1])
		}
	}
	return c
}

// signature is what a function or view source defines, as its COMMENT ON
// names it without spaces (webhooks.f(int,text)); "" for checks.
func signature(text string) string {
	if m := commentOn.FindStringSubmatch(text); m != nil {
		return strings.Join(strings.Fields(m[2]), "")
	}
	return ""
}

// defined is the name of the function or view a migration's body creates
// ("" for checks).
func defined(body string) string {
	if m := createFn.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	if m := createVw.FindStringSubmatch(body); m != nil {
		return m[2]
	}
	return ""
}

// later lists what the migrations after version v create: the tables,
// views, types and sequences of sql/schema (a table renamed too), and every
// function or view whose first migration, or a new signature, comes after v.
func (t *Tree) later(v int) []change {
	var out []change
	for _, c := range t.schema {
		if c.Version > v && len(c.Names) > 0 {
			out = append(out, c)
		}
	}
	prev := map[string]Migration{}
	for _, m := range t.Migrations {
		p, seen := prev[m.Key]
		prev[m.Key] = m
		if m.Version <= v || (seen && signature(p.Body) == signature(m.Body)) {
			continue
		}
		if name := defined(m.Body); name != "" {
			out = append(out, change{Path: m.Path, Version: m.Version, Names: []string{name}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

// File is a migration to write: its path under the checkout and its text.
type File struct {
	Path   string
	Text   string
	Source string // the sql/src file it states
	// Fold: Path is the source's newest migration, unreleased and written by
	// the generator, rewritten between its begin and end lines (the
	// hand-written steps before and after them kept); otherwise Path is a
	// new file, the next version.
	Fold bool
	Why  string // why it folds, or why it adds a file
	// Note is what is left to the contributor, "" when nothing is: a changed
	// signature needs its old one granted and dropped by hand.
	Note string
}

// Report is the line make sql-migrations prints for f: what is due (with
// -n) or what it wrote, fold or new and why, then the note if any.
func (f File) Report(dryRun bool) string {
	verb := map[bool]string{true: "fold", false: "new"}[f.Fold]
	line := fmt.Sprintf("due: %s (%s: %s)", f.Path, verb, f.Why)
	switch {
	case dryRun:
	case f.Fold:
		line = fmt.Sprintf("folded %s into %s (%s)", f.Source, f.Path, f.Why)
	default:
		line = fmt.Sprintf("wrote %s (%s: %s)", f.Path, verb, f.Why)
	}
	if f.Note != "" {
		line += "\n  note: " + f.Note
	}
	return line
}

// Pending returns the migrations that bring every source and its newest
// migration back in step, in the order of the sources' paths, for each
// source with no migration or whose text differs from its newest one:
//
//   - fold: the newest migration rewritten between its begin and end lines,
//     when it is unreleased, was written by the generator (it has those
//     lines), and the source names nothing a later migration creates (a
//     table, view, type or function, or a function's new signature) where
//     Postgres resolves names as the migration is applied: in a view, a
//     LANGUAGE sql function, a family of checks or a statement the file
//     runs (see checkedWhereItStands). A plpgsql body folds whatever it
//     names. What this misses (a column a later migration adds) fails
//     the migration on a fresh database: make sql-migrations NEW=1 then;
//   - new: otherwise, the next version in the one sequence of sql/schema,
//     sql/functions, sql/views and sql/checks. A view that had a migration
//     is dropped first (a materialized view has no CREATE OR REPLACE).
//
// A function's changed signature folds too, since no released database has
// the unreleased one; File.Note says what is left to write by hand.
func (t *Tree) Pending() []File {
	var out []File
	next := t.Latest
	srcs := append([]Source(nil), t.Sources...)
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Path < srcs[j].Path })
	perKey := map[string]int{}
	for _, s := range srcs {
		perKey[s.Key]++
	}
	for _, s := range srcs {
		newest, ok := t.Newest(s.Key)
		if ok && newest.Body == s.Text {
			continue
		}
		var f File
		before, hasBefore := newest, ok // what the database has before f
		replaced := ""                  // the signature a folded migration defined
		why := t.noFold(s, newest, ok, perKey[s.Key])
		if why == "" {
			f = fold(s, newest)
			before, hasBefore = t.before(newest)
			replaced = signature(newest.Body)
		} else {
			next++
			f = add(s, newest, ok, next)
			f.Why = why
		}
		if s.Kind == Function {
			f.Note = signatureNote(s, f, before, hasBefore, replaced)
		}
		out = append(out, f)
	}
	return out
}

// noFold says why the source s does not fold into newest, its newest
// migration (ok false: it has none); "" when it folds.
func (t *Tree) noFold(s Source, newest Migration, ok bool, sources int) string {
	switch {
	case !ok:
		return s.Path + " has no migration yet"
	case t.AddOnly:
		return "asked for (-new)"
	case newest.Released:
		return newest.Path + " is released"
	case !newest.Generated:
		return newest.Path + " was written by hand (no begin and end lines)"
	case newest.Kind != s.Kind:
		return fmt.Sprintf("%s defines a %s", newest.Path, newest.Kind)
	case sources > 1:
		return "two sources define " + s.Key
	}
	own, code := defined(s.Text), prose.ReplaceAllString(s.Text, "")
	if !checkedWhereItStands(s.Kind, code) {
		return ""
	}
	for _, c := range t.later(newest.Version) {
		for _, name := range c.Names {
			if name == own {
				continue
			}
			if regexp.MustCompile(`\bwebhooks\.` + regexp.QuoteMeta(name) + `\b`).MatchString(code) {
				return fmt.Sprintf("%s names webhooks.%s, which %s creates after %s", s.Path, name, c.Path, newest.Path)
			}
		}
	}
	return ""
}

// before returns the migration of m's object that precedes m, if any.
func (t *Tree) before(m Migration) (Migration, bool) {
	var out Migration
	found := false
	for _, o := range t.Migrations {
		if o.Key == m.Key && o.Version < m.Version {
			out, found = o, true
		}
	}
	return out, found
}

// signatureNote is what a function's changed signature leaves to do by
// hand in f, the migration written from s: before is the migration the
// database has applied before f (hasBefore false: none, f creates the
// function), replaced the signature f defined before it was folded ("" for
// a new file). It is "" when the signature is the one before, or f creates
// the function, or f already drops the old signature after its end line.
// It warns too when f drops, after its end line, the signature it now
// creates (a fold back to the released signature), and when f's
// hand-written steps name the signature it no longer defines.
func signatureNote(s Source, f File, before Migration, hasBefore bool, replaced string) string {
	sig := signature(s.Text)
	b, e, ok := markers(f.Text)
	if sig == "" || !ok || e == nil {
		return ""
	}
	norm := func(x string) string { return strings.ToUpper(strings.Join(strings.Fields(x), "")) }
	after, steps := norm(f.Text[e[1]:]), norm(f.Text[:b[0]]+f.Text[e[1]:])
	drops := func(sig string) bool { return strings.Contains(after, norm("DROP FUNCTION "+sig)) }
	var notes []string
	if drops(sig) {
		notes = append(notes, fmt.Sprintf("%s drops %s after its end line, the signature %s now defines: remove that step",
			f.Path, sig, s.Path))
	}
	if replaced != "" && replaced != sig && strings.Contains(steps, norm(replaced)) {
		notes = append(notes, fmt.Sprintf("the hand-written steps of %s name %s, which it no longer defines (%s defines %s): "+
			"make them name the new one", f.Path, replaced, s.Path, sig))
	}
	if old := signature(before.Body); hasBefore && old != "" && old != sig && !drops(old) {
		notes = append(notes, fmt.Sprintf("%s defines %s where %s defined %s: after the end line of %s, grant the new "+
			"signature to the roles that could execute the old one, then DROP FUNCTION %s (or it stays behind)",
			s.Path, sig, before.Path, old, f.Path, old))
	}
	return strings.Join(notes, "; ")
}

// checkedWhereItStands says whether Postgres resolves the names a source
// uses (code: its text without comments) when its migration is applied: a
// view, a function in LANGUAGE sql, a family of checks (an INSERT), or a
// file that runs a statement of its own (an UPDATE, INSERT, SELECT,
// PERFORM, DO, CALL, GRANT, LOCK or CREATE TRIGGER at the start of a line).
// A plpgsql body is resolved when it runs, after every migration.
func checkedWhereItStands(kind Kind, code string) bool {
	return kind != Function || sqlBody.MatchString(code) || runs.MatchString(code)
}

// header opens the text a migration states from src.
func header(src string) string {
	return fmt.Sprintf("-- begin %s (make sql-migrations wrote what follows from that file: edit it, not this)\n", src)
}

// fold rewrites m, s's newest migration, between its begin and end lines.
func fold(s Source, m Migration) File {
	b, e, _ := markers(m.text)
	text := m.text[:b[0]] + header(s.Path) + s.Text + "-- end " + s.Path + "\n" + m.text[e[1]:]
	return File{Path: m.Path, Text: text, Source: s.Path, Fold: true,
		Why: "unreleased, rewritten between its begin and end lines"}
}

// add writes version next of s; newest is its newest migration (ok false:
// it has none).
func add(s Source, newest Migration, ok bool, next int) File {
	verb := map[bool]map[Kind]string{
		false: {Function: "create_function_", View: "create_view_", Checks: "insert_"},
		true:  {Function: "replace_function_", View: "replace_view_", Checks: "update_"},
	}[ok][s.Kind]
	var b strings.Builder
	b.WriteString(upLine + "\n")
	if ok && s.Kind == View {
		_, name := kindOf(s.Text)
		what := "VIEW"
		if createVw.FindStringSubmatch(s.Text)[1] != "" {
			what = "MATERIALIZED VIEW"
		}
		fmt.Fprintf(&b, "-- A view is dropped and created again. A view that depends on this one\n"+
			"-- must be dropped before and created after: add it here.\nDROP %s webhooks.%s;\n", what, name)
	}
	b.WriteString(header(s.Path))
	b.WriteString(s.Text)
	fmt.Fprintf(&b, "-- end %s\n", s.Path)
	return File{
		Path:   path.Join(s.Kind.dir(), fmt.Sprintf("%05d_%s%s.sql", next, verb, s.Key)),
		Text:   b.String(),
		Source: s.Path,
	}
}
