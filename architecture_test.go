package pginbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/provider"
)

// The code map is docs/architecture.md's "Where the code lives": its tables
// are claims about the code, and the tests below check each claim against
// the code itself (go list, sql/src, the provider kinds, the settings table),
// row by row. They require every package and every SQL concern to have a row
// and every claim a row makes to be true; they do not freeze file lists, so
// a new file, function or test never fails them.

const (
	codeMapModule = "github.com/pginbox/pginbox"
	codeMapDoc    = "docs/architecture.md"
)

// TestCodeMapNamesEveryPackage checks the package table of
// docs/architecture.md against `go list` (and, for the nested modules, their
// import declarations): every package has exactly one row and every row
// names a package; a row's "imports" cell lists exactly the packages of this
// repository the package imports (outside its tests), and its "who imports
// it" cell exactly the packages that import it (outside their tests), with
// "tests" said where tests import it and said only then. An "imports" cell
// that says "standard library" is held to it: the package depends on no
// module but the standard library and pginbox.
func TestCodeMapNamesEveryPackage(t *testing.T) {
	t.Parallel()
	pkgs := repoPackages(t)
	doc := readDoc(t, codeMapDoc)
	tab := findTable(t, doc, codeMapDoc, func(tb mdTable) bool { return tb.col("who imports it") >= 0 })
	where, imports, importers := tab.col("where"), tab.col("imports"), tab.col("who imports it")
	if where < 0 {
		t.Fatalf("%s: the package table (line %d) has no column \"where\": %q", codeMapDoc, tab.line, tab.header)
	}
	if imports < 0 {
		t.Errorf("%s: the package table (line %d) has no column \"imports\" (the packages of pginbox each one imports): %q",
			codeMapDoc, tab.line, tab.header)
	}
	seen := map[string]int{}
	for _, row := range tab.rows {
		toks := backticked(row.cells[where])
		if len(toks) == 0 {
			t.Errorf("%s:%d: the row names no package in backticks: %q", codeMapDoc, row.line, row.cells[where])
			continue
		}
		name := toks[0]
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("%s:%d: the row of `%s` names no package of the repository (packages are named by their folder, the root one `pginbox`)", codeMapDoc, row.line, name)
			continue
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("%s:%d: `%s` has a second row (the first at line %d)", codeMapDoc, row.line, name, prev)
			continue
		}
		seen[name] = row.line

		at := fmt.Sprintf("%s:%d: `%s`", codeMapDoc, row.line, name)
		if imports >= 0 {
			cell := row.cells[imports]
			claimed := packageTokens(t, pkgs, codeMapDoc, row.line, "imports", cell)
			compareSets(t, at, "imports %s, which its row does not list", "does not import %s, which its row lists", claimed, p.imports)
			if strings.Contains(cell, "standard library") && len(p.external) > 0 {
				t.Errorf("%s: its row says standard library only; it depends on %s", at, strings.Join(p.external, ", "))
			}
		}

		cell := row.cells[importers]
		claimed := packageTokens(t, pkgs, codeMapDoc, row.line, "who imports it", cell)
		compareSets(t, at, "is imported by %s, which its row does not list", "is not imported by %s, which its row lists", claimed, p.importers)
		saysTests := regexp.MustCompile(`\btests\b`).MatchString(withoutBackticks(cell))
		switch {
		case saysTests && len(p.testImporters) == 0:
			t.Errorf("%s:%d: the row of `%s` says tests import it; no test file does", codeMapDoc, row.line, name)
		case !saysTests && len(p.importers) == 0 && len(p.testImporters) > 0:
			t.Errorf("%s:%d: only tests import `%s` (%s); its \"who imports it\" cell should say so",
				codeMapDoc, row.line, name, strings.Join(p.testImporters, ", "))
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages: is go list broken?", len(pkgs))
	}
	for _, name := range sortedNames(pkgs) {
		if _, ok := seen[name]; !ok {
			t.Errorf("%s has no row for `%s`: add it to the package table with its job, its imports and who imports it", codeMapDoc, name)
		}
	}
}

// TestCodeMapSQLConcerns checks the SQL side of the code map: every concern
// folder under sql/src has exactly one row in the "SQL sources" table, is
// named in the SQL column of "A delivery's path" and in sql/README.md's list
// of concerns; every folder named exists; and every function (`name()`),
// object (`name`) or file (`name.sql`) a row names is defined in the
// folder(s) that row names.
func TestCodeMapSQLConcerns(t *testing.T) {
	t.Parallel()
	concerns := sqlConcerns(t)
	if len(concerns) < 5 {
		t.Fatalf("found only %d concern folders under sql/src: is the walk broken?", len(concerns))
	}
	doc := readDoc(t, codeMapDoc)

	// The "SQL sources" table: one row per concern.
	src := findTable(t, doc, codeMapDoc, func(tb mdTable) bool { return tb.heading == "SQL sources" })
	where, what := src.col("where"), src.col("what")
	if where < 0 || what < 0 {
		t.Fatalf("%s: the \"SQL sources\" table (line %d) needs the columns \"where\" and \"what\"; it has %q", codeMapDoc, src.line, src.header)
	}
	seen := map[string]int{}
	for _, row := range src.rows {
		toks := backticked(row.cells[where])
		if len(toks) != 1 || !strings.HasPrefix(toks[0], "sql/src/") {
			t.Errorf("%s:%d: the row should name one folder `sql/src/<concern>`; it names %q", codeMapDoc, row.line, row.cells[where])
			continue
		}
		c := strings.TrimSuffix(strings.TrimPrefix(toks[0], "sql/src/"), "/")
		files, ok := concerns[c]
		if !ok {
			t.Errorf("%s:%d: `sql/src/%s` is no folder of SQL sources", codeMapDoc, row.line, c)
			continue
		}
		if prev, dup := seen[c]; dup {
			t.Errorf("%s:%d: `sql/src/%s` has a second row (the first at line %d)", codeMapDoc, row.line, c, prev)
		}
		seen[c] = row.line
		for _, tok := range backticked(row.cells[what]) {
			if err := sqlNameIn(files, tok); err != nil {
				t.Errorf("%s:%d: the row of `sql/src/%s`: %v", codeMapDoc, row.line, c, err)
			}
		}
	}
	for _, c := range sortedNames(concerns) {
		if _, ok := seen[c]; !ok {
			t.Errorf("%s: the \"SQL sources\" table has no row for `sql/src/%s`", codeMapDoc, c)
		}
	}

	// "A delivery's path": the SQL column names its folders and what is in
	// them; the Go column names packages and files of those packages.
	pkgs := repoPackages(t)
	steps := findTable(t, doc, codeMapDoc, func(tb mdTable) bool { return tb.col("step") >= 0 })
	sqlCol, goCol := steps.col("sql"), steps.col("go")
	if sqlCol < 0 || goCol < 0 {
		t.Fatalf("%s: the table of steps (line %d) needs the columns \"SQL\" and \"Go\"; it has %q", codeMapDoc, steps.line, steps.header)
	}
	named := map[string]bool{}
	for _, row := range steps.rows {
		files := map[string]string{}
		var names []string
		for _, tok := range backticked(row.cells[sqlCol]) {
			if c, ok := strings.CutPrefix(strings.TrimSuffix(tok, "/"), "sql/src/"); ok {
				if cf, ok := concerns[c]; ok {
					named[c] = true
					for f, body := range cf {
						files[f] = body
					}
				} else {
					t.Errorf("%s:%d: `%s` is no folder of SQL sources", codeMapDoc, row.line, tok)
				}
				continue
			}
			names = append(names, tok)
		}
		if len(files) == 0 && len(names) > 0 {
			t.Errorf("%s:%d: the SQL cell names no `sql/src/<concern>` folder for %v", codeMapDoc, row.line, names)
		}
		for _, tok := range names {
			if err := sqlNameIn(files, tok); err != nil {
				t.Errorf("%s:%d: %v", codeMapDoc, row.line, err)
			}
		}
		var dirs []string
		var goFiles []string
		for _, tok := range backticked(row.cells[goCol]) {
			switch {
			case strings.HasSuffix(tok, ".go"):
				goFiles = append(goFiles, tok)
			case pkgs[tok] != nil:
				dirs = append(dirs, pkgs[tok].dir)
			default:
				t.Errorf("%s:%d: the Go cell names `%s`, which is neither a package nor a .go file", codeMapDoc, row.line, tok)
			}
		}
		for _, f := range goFiles {
			if !slices.ContainsFunc(dirs, func(d string) bool { return fileExists(filepath.Join(d, f)) }) {
				t.Errorf("%s:%d: `%s` is in none of the packages the Go cell names", codeMapDoc, row.line, f)
			}
		}
	}
	for _, c := range sortedNames(concerns) {
		if !named[c] {
			t.Errorf("%s: no step of \"A delivery's path\" names `sql/src/%s` in its SQL column", codeMapDoc, c)
		}
	}

	// sql/README.md lists the concerns in its table of folders.
	readme := readDoc(t, "sql/README.md")
	_, list, ok := strings.Cut(readme, "Concerns:")
	if !ok {
		t.Fatal("sql/README.md no longer lists the concerns (\"Concerns:\" in its table of folders)")
	}
	list, _, _ = strings.Cut(list, "\n")
	list = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(list, "") // what a concern holds
	listed := map[string]bool{}
	for _, tok := range backticked(list) {
		listed[tok] = true
		if _, ok := concerns[tok]; !ok {
			t.Errorf("sql/README.md lists the concern `%s`; sql/src has no such folder", tok)
		}
	}
	for _, c := range sortedNames(concerns) {
		if !listed[c] {
			t.Errorf("sql/README.md does not list the concern `%s` (sql/src/%s)", c, c)
		}
	}
}

// TestCodeMapPaths checks the paths docs/architecture.md names: every path
// of the repository in backticks exists (a `<kind>`-like placeholder stands
// for any name), and where a file is followed by names in parentheses,
// "`internal/process/rowlock_sql.go` (`webhooks.process_pending()`)", the
// file holds each of those names: it calls or defines them.
func TestCodeMapPaths(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, codeMapDoc)
	repoPath := regexp.MustCompile(`^(internal|runner|sql|tests|bench|tools|docs|examples|deploy|pginboxtype)/[A-Za-z0-9_.<>/-]*$`)
	checked := 0
	for _, tok := range backticked(doc) {
		if !repoPath.MatchString(tok) {
			continue
		}
		checked++
		if len(globRepo(tok)) == 0 {
			t.Errorf("%s names `%s`, which does not exist", codeMapDoc, tok)
		}
	}
	if checked < 10 {
		t.Errorf("%s: found only %d paths to check: is the pattern broken?", codeMapDoc, checked)
	}

	claim := regexp.MustCompile("`([A-Za-z0-9_.<>/-]+\\.(?:go|sql))` \\(((?:`[^`]+`(?:, | and |, and )?)+)\\)")
	claims := claim.FindAllStringSubmatch(doc, -1)
	if len(claims) == 0 {
		t.Errorf("%s: found no \"`file` (`name`, …)\" claims: is the pattern broken?", codeMapDoc)
	}
	for _, m := range claims {
		files := globRepo(m[1])
		for _, tok := range backticked(m[2]) {
			word := sqlIdent(tok)
			if word == "" {
				t.Errorf("%s: `%s` (`%s`): cannot check `%s`; name a function or an identifier", codeMapDoc, m[1], tok, tok)
				continue
			}
			re := regexp.MustCompile(`\b` + regexp.QuoteMeta(word) + `\b`)
			for _, f := range files {
				body, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if !re.Match(body) {
					t.Errorf("%s says `%s` calls or defines `%s`; %s does not name it", codeMapDoc, m[1], tok, f)
				}
			}
		}
	}
}

// TestCodeMapProviderKinds checks what docs/architecture.md says of the
// provider kinds against internal/provider's list: the diagram's provider
// node names every kind and no other, and a count of kinds is the count.
func TestCodeMapProviderKinds(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, codeMapDoc)
	kinds := provider.Names()
	node := regexp.MustCompile(`(?m)^\s*P\[Provider<br/>(.*)\]\s*$`).FindStringSubmatch(doc)
	if node == nil {
		t.Fatalf("%s: the diagram has no provider node `P[Provider<br/>kind · kind · …]`", codeMapDoc)
	}
	var drawn []string
	for _, k := range strings.Split(node[1], "·") {
		drawn = append(drawn, strings.ToLower(strings.ReplaceAll(strings.TrimSpace(k), " ", "")))
	}
	compareSets(t, codeMapDoc+": the diagram's provider node", "lacks the kind %s", "names %s, which internal/provider does not have", drawn, kinds)
	counts := regexp.MustCompile(`(?i)\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) (?:provider )?kinds\b`)
	for _, m := range counts.FindAllStringSubmatch(doc, -1) {
		if n := numberWord(m[1]); n != len(kinds) {
			t.Errorf("%s says %q; internal/provider has %d kinds (%s)", codeMapDoc, m[0], len(kinds), strings.Join(kinds, ", "))
		}
	}
}

// TestCodeMapDefaults checks the default paths docs/architecture.md's prose
// and diagram describe against the code. Ingest: with PGINBOX_INGEST_BATCH
// above 1 by default (the settings table) the runner stores deliveries with
// the function its batchSQL statement calls, else with ingestSQL's; the prose
// gives the default's value, and the paragraph "Ingest exactly once" and the
// diagram's ingest node name that function. Processing: the default lease of
// a sql: handler is rowLockSQL (TestStrategiesFor pins it), and the sentence
// of "Process with SKIP LOCKED workers" that says what the default for a
// `sql:` handler is names the function rowLockSQL's statement calls.
func TestCodeMapDefaults(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, codeMapDoc)
	i := slices.IndexFunc(envconfig.Table, func(s envconfig.Setting) bool { return s.Env == "PGINBOX_INGEST_BATCH" })
	if i < 0 {
		t.Fatal("the settings table has no PGINBOX_INGEST_BATCH: update this test and the prose of docs/architecture.md")
	}
	def, err := strconv.Atoi(envconfig.Table[i].Default)
	if err != nil {
		t.Fatalf("PGINBOX_INGEST_BATCH's default %q: %v", envconfig.Table[i].Default, err)
	}
	said := regexp.MustCompile("`PGINBOX_INGEST_BATCH` \\(default (\\d+)\\)").FindStringSubmatch(doc)
	if said == nil {
		t.Errorf("%s does not say how the runner stores deliveries by default (\"`PGINBOX_INGEST_BATCH` (default N)\")", codeMapDoc)
	} else if said[1] != strconv.Itoa(def) {
		t.Errorf("%s says PGINBOX_INGEST_BATCH defaults to %s; the settings table says %d", codeMapDoc, said[1], def)
	}
	stmt := "ingestSQL"
	if def > 1 {
		stmt = "batchSQL"
	}
	ingest := calledFunctions(t, "internal/ingest", func(name string) bool { return name == stmt })
	if len(ingest) != 1 {
		t.Fatalf("internal/ingest: %s calls %v; want one function of schema webhooks", stmt, ingest)
	}
	if p := mdParagraph(doc, "**Ingest exactly once.**"); !strings.Contains(p, "`webhooks."+ingest[0]+"()`") {
		t.Errorf("%s: by default (PGINBOX_INGEST_BATCH=%d) the runner stores deliveries with webhooks.%s(); the paragraph \"Ingest exactly once\" does not name `webhooks.%s()`",
			codeMapDoc, def, ingest[0], ingest[0])
	}
	node := regexp.MustCompile(`(?m)^\s*I\["(.*)"\]\s*$`).FindStringSubmatch(doc)
	if node == nil || !strings.Contains(node[1], ingest[0]+"()") {
		t.Errorf("%s: the diagram's ingest node `I[\"…\"]` does not name %s(), which the runner stores deliveries with by default", codeMapDoc, ingest[0])
	}

	process := calledFunctions(t, "internal/process", func(name string) bool { return name == "rowLockSQL" })
	if len(process) != 1 {
		t.Fatalf("internal/process: rowLockSQL's methods call %v; want one function of schema webhooks", process)
	}
	var sentence string
	for _, s := range strings.SplitAfter(mdParagraph(doc, "**Process with SKIP LOCKED workers.**"), ". ") {
		if strings.Contains(s, "`sql:`") && strings.Contains(s, "default") {
			sentence = s
			break
		}
	}
	if !strings.Contains(sentence, "`webhooks."+process[0]+"()`") {
		t.Errorf("%s: the default lease of a sql: handler runs webhooks.%s(); the paragraph \"Process with SKIP LOCKED workers\" has no sentence on the default for a `sql:` handler that names it (found %q)",
			codeMapDoc, process[0], sentence)
	}
}

// mdParagraph returns the paragraph of doc that starts with start, "" when
// there is none.
func mdParagraph(doc, start string) string {
	_, p, ok := strings.Cut(doc, "\n"+start)
	if !ok {
		return ""
	}
	p, _, _ = strings.Cut(p, "\n\n")
	return strings.ReplaceAll(p, "\n", " ")
}

// calledFunctions returns the functions of schema webhooks that the string
// literals of dir's non-test files call, inside the declarations (a const
// or var, or a type and its methods) that match accepts, sorted.
func calledFunctions(t *testing.T, dir string, match func(name string) bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`\bwebhooks\.([a-z_][a-z0-9_]*)\s*\(`)
	var found []string
	literals := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(lit.Value)
			for _, m := range call.FindAllStringSubmatch(s, -1) {
				if !slices.Contains(found, m[1]) {
					found = append(found, m[1])
				}
			}
			return true
		})
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if v, ok := spec.(*ast.ValueSpec); ok && slices.ContainsFunc(v.Names, func(n *ast.Ident) bool { return match(n.Name) }) {
						literals(v)
					}
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 && match(recvType(d.Recv.List[0].Type)) {
					literals(d.Body)
				}
			}
		}
	}
	slices.Sort(found)
	return found
}

// recvType is the name of a method's receiver type.
func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestDocsNameRealTests checks that every test docs/architecture.md,
// docs/guarantees.md and the README's "Guarantees" section name as the
// proof of a claim exists.
func TestDocsNameRealTests(t *testing.T) {
	t.Parallel()
	tests := testFuncs(t)
	if len(tests) < 50 {
		t.Fatalf("found only %d test functions: is the walk broken?", len(tests))
	}
	readme := readDoc(t, "README.md")
	_, guarantees, ok := strings.Cut(readme, "\n## Guarantees\n")
	if !ok {
		t.Fatal("README.md has no \"## Guarantees\" section")
	}
	guarantees, _, _ = strings.Cut(guarantees, "\n## ")
	docs := map[string]string{
		codeMapDoc:             readDoc(t, codeMapDoc),
		"docs/guarantees.md":   readDoc(t, "docs/guarantees.md"),
		"README.md Guarantees": guarantees,
	}
	name := regexp.MustCompile(`\b(?:Test|Fuzz)[A-Z][A-Za-z0-9_]*\b`)
	for _, doc := range sortedNames(docs) {
		for _, n := range name.FindAllString(docs[doc], -1) {
			if !tests[n] {
				t.Errorf("%s names %s; no _test.go file defines it", doc, n)
			}
		}
	}
}

// TestDocsOrderingIsAPromiseWhenSet keeps the docs from calling order a mere
// preference while webhooks.set_ordering() promises it per key: where
// docs/architecture.md calls order a preference or no promise, where
// docs/guarantees.md lists order as not promised, and where the README's
// "Guarantees" section does, the same paragraph, bullet or section names
// `set_ordering` (what is promised and where it stops); and
// docs/guarantees.md's "What is promised" names it.
func TestDocsOrderingIsAPromiseWhenSet(t *testing.T) {
	t.Parallel()
	if !fileExists("sql/src/order/set_ordering.sql") {
		t.Skip("no webhooks.set_ordering(): nothing is promised about order")
	}
	order := regexp.MustCompile(`(?i)\border(ing|ed)?\b`)
	hedge := regexp.MustCompile(`(?i)preference|not a promise|no promise|not promised`)
	for _, p := range strings.Split(readDoc(t, codeMapDoc), "\n\n") {
		if order.MatchString(p) && hedge.MatchString(p) && !strings.Contains(p, "set_ordering") {
			t.Errorf("%s: a paragraph calls order a preference or no promise without naming `set_ordering`, which promises it per key:\n%s", codeMapDoc, p)
		}
	}
	guarantees := readDoc(t, "docs/guarantees.md")
	promised, notPromised, ok := strings.Cut(guarantees, "\n## What is not promised\n")
	if !ok {
		t.Fatal("docs/guarantees.md has no \"## What is not promised\" section")
	}
	if !strings.Contains(promised, "set_ordering") {
		t.Error("docs/guarantees.md: \"What is promised\" does not name `set_ordering`, the order per key it promises")
	}
	for _, item := range strings.Split(notPromised, "\n- ") {
		if order.MatchString(item) && !strings.Contains(item, "set_ordering") {
			t.Errorf("docs/guarantees.md lists order as not promised without naming `set_ordering`:\n- %s", item)
		}
	}
	_, readme, _ := strings.Cut(readDoc(t, "README.md"), "\n## Guarantees\n")
	readme, _, _ = strings.Cut(readme, "\n## ")
	if _, not, ok := strings.Cut(readme, "Not promised"); ok && order.MatchString(not) && !strings.Contains(readme, "set_ordering") {
		t.Errorf("README.md: \"Guarantees\" lists order as not promised without naming `set_ordering`:\n%s", readme)
	}
}

// codePkg is one package of the repository.
type codePkg struct {
	dir           string   // its folder
	imports       []string // the packages of this repository it imports, outside its tests
	importers     []string // the packages that import it, outside their tests
	testImporters []string // the packages whose tests import it
	external      []string // what it depends on beyond the standard library and pginbox
}

// repoPackages returns the packages of the repository by name: its folder
// relative to the root, `pginbox` for the root package. The main module's
// come from go list; the nested modules' (each with a go.mod of its own)
// from their import declarations.
func repoPackages(t *testing.T) map[string]*codePkg {
	t.Helper()
	out, err := goList()
	if err != nil {
		t.Fatal(err)
	}
	type listed struct {
		ImportPath, Dir                          string
		Imports, TestImports, XTestImports, Deps []string
		Error                                    *struct{ Err string }
	}
	pkgs := map[string]*codePkg{}
	tests := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var l listed
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("go list: %v", err)
		}
		if l.Error != nil {
			t.Errorf("go list %s: %s", l.ImportPath, l.Error.Err)
		}
		name := pkgName(l.ImportPath)
		p := &codePkg{dir: l.Dir}
		for _, imp := range l.Imports {
			if inModule(imp) {
				p.imports = append(p.imports, pkgName(imp))
			}
		}
		for _, d := range l.Deps {
			if !inModule(d) && strings.Contains(strings.Split(d, "/")[0], ".") {
				p.external = append(p.external, d)
			}
		}
		for _, imp := range slices.Concat(l.TestImports, l.XTestImports) {
			if inModule(imp) && imp != l.ImportPath {
				tests[name] = append(tests[name], pkgName(imp))
			}
		}
		pkgs[name] = p
	}
	for name, p := range nestedModulePackages(t) {
		pkgs[name] = p
	}
	for name, p := range pkgs {
		for _, imp := range p.imports {
			if q := pkgs[imp]; q != nil && !slices.Contains(q.importers, name) {
				q.importers = append(q.importers, name)
			}
		}
		for _, imp := range tests[name] {
			if q := pkgs[imp]; q != nil && !slices.Contains(q.testImporters, name) {
				q.testImporters = append(q.testImporters, name)
			}
		}
	}
	for _, p := range pkgs {
		slices.Sort(p.importers)
		slices.Sort(p.testImporters)
	}
	return pkgs
}

// goList runs go list once for all the tests of this file.
var goList = sync.OnceValues(func() ([]byte, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,Imports,TestImports,XTestImports,Deps,Error", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	return out, nil
})

// nestedModulePackages returns the folders of the modules nested in the
// repository (a go.mod of their own) that hold Go code or a go.mod, with the
// pginbox packages their non-test files import.
func nestedModulePackages(t *testing.T) map[string]*codePkg {
	t.Helper()
	var modules []string
	walkRepo(t, func(p string, d fs.DirEntry) {
		if d.Name() == "go.mod" && filepath.Dir(p) != "." {
			modules = append(modules, filepath.ToSlash(filepath.Dir(p)))
		}
	})
	pkgs := map[string]*codePkg{}
	for _, m := range modules {
		pkgs[m] = &codePkg{dir: m}
	}
	fset := token.NewFileSet()
	walkRepo(t, func(p string, d fs.DirEntry) {
		dir := filepath.ToSlash(filepath.Dir(p))
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") ||
			!slices.ContainsFunc(modules, func(m string) bool { return dir == m || strings.HasPrefix(dir, m+"/") }) {
			return
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		q := pkgs[dir]
		if q == nil {
			q = &codePkg{dir: dir}
			pkgs[dir] = q
		}
		for _, imp := range f.Imports {
			v, _ := strconv.Unquote(imp.Path.Value)
			if inModule(v) && !slices.Contains(q.imports, pkgName(v)) && !slices.Contains(modules, pkgName(v)) {
				q.imports = append(q.imports, pkgName(v))
			}
		}
	})
	return pkgs
}

func inModule(importPath string) bool {
	return importPath == codeMapModule || strings.HasPrefix(importPath, codeMapModule+"/")
}

// pkgName names a package of the repository by its folder: `pginbox` for
// the root one.
func pkgName(importPath string) string {
	if importPath == codeMapModule {
		return "pginbox"
	}
	return strings.TrimPrefix(importPath, codeMapModule+"/")
}

// walkRepo calls fn for every file of the repository, leaving out hidden
// folders, testdata, node_modules and build output.
func walkRepo(t *testing.T, fn func(p string, d fs.DirEntry)) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "dist" || name == "out" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		fn(p, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sqlConcerns returns the concern folders under sql/src, each with its .sql
// files by name and their text.
func sqlConcerns(t *testing.T) map[string]map[string]string {
	t.Helper()
	concerns := map[string]map[string]string{}
	matches, err := filepath.Glob("sql/src/*/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		body, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Base(filepath.Dir(m))
		if concerns[c] == nil {
			concerns[c] = map[string]string{}
		}
		concerns[c][filepath.Base(m)] = string(body)
	}
	return concerns
}

// sqlNameIn checks one name a row gives against the files of its folders:
// `name()` or `name(args)` is a function a file defines, `name` a function,
// view, materialized view or trigger a file defines, `x.sql` (a <family>
// placeholder standing for any text) a file of the folders.
func sqlNameIn(files map[string]string, tok string) error {
	if strings.HasSuffix(tok, ".sql") {
		pattern := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(tok, "*")
		for f := range files {
			if ok, _ := path.Match(pattern, f); ok {
				return nil
			}
		}
		return fmt.Errorf("names the file `%s`; the folder has none", tok)
	}
	m := regexp.MustCompile(`^(?:webhooks\.)?([a-z_][a-z0-9_]*)(\(.*\))?$`).FindStringSubmatch(tok)
	if m == nil {
		return fmt.Errorf("cannot check `%s`: name a function as `name()`, a view or trigger as `name`, a file as `name.sql`, or leave it out of backticks", tok)
	}
	kind, what := `(?:FUNCTION|VIEW|TRIGGER)\s+(?:webhooks\.)?`, "function, view or trigger"
	if m[2] != "" {
		kind, what = `FUNCTION\s+webhooks\.`, "function"
	}
	re := regexp.MustCompile(`(?i)\b` + kind + regexp.QuoteMeta(m[1]) + `\b`)
	for _, body := range files {
		if re.MatchString(body) {
			return nil
		}
	}
	return fmt.Errorf("names `%s`; no file of the folder defines that %s", tok, what)
}

// sqlIdent is the identifier a backticked name stands for: `webhooks.f()`
// and `f()` stand for f, `_f` for _f; "" when it is no identifier.
func sqlIdent(tok string) string {
	m := regexp.MustCompile(`^(?:webhooks\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\(.*\))?$`).FindStringSubmatch(tok)
	if m == nil {
		return ""
	}
	return m[1]
}

// globRepo returns the files and folders a repository path stands for, a
// <placeholder> standing for any one name.
func globRepo(p string) []string {
	pattern := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(strings.TrimSuffix(p, "/"), "*")
	matches, _ := filepath.Glob(filepath.FromSlash(pattern))
	return matches
}

// testFuncs returns the names of the Test and Fuzz functions of every
// _test.go file of the repository.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]*)\(`)
	names := map[string]bool{}
	walkRepo(t, func(p string, d fs.DirEntry) {
		if !strings.HasSuffix(p, "_test.go") {
			return
		}
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(body, -1) {
			names[string(m[1])] = true
		}
	})
	return names
}

// mdTable is one Markdown table: the heading it is under, its header cells
// and its rows, with the line numbers of the table and of each row.
type mdTable struct {
	heading string
	header  []string
	line    int
	rows    []mdRow
}

type mdRow struct {
	cells []string
	line  int
}

// col returns the index of the column whose header is name, lower case,
// or name followed by a note in parentheses; -1 when there is none.
func (tb mdTable) col(name string) int {
	return slices.IndexFunc(tb.header, func(h string) bool {
		h = strings.ToLower(h)
		return h == name || strings.HasPrefix(h, name+" (")
	})
}

// mdTables returns the tables of a Markdown document.
func mdTables(doc string) []mdTable {
	lines := strings.Split(doc, "\n")
	var tables []mdTable
	heading := ""
	for i := 0; i < len(lines); i++ {
		if h, ok := strings.CutPrefix(lines[i], "#"); ok {
			heading = strings.TrimSpace(strings.TrimLeft(h, "#"))
			continue
		}
		if !strings.HasPrefix(lines[i], "|") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|--") && !strings.HasPrefix(lines[i+1], "| --") {
			continue
		}
		tb := mdTable{heading: heading, header: mdCells(lines[i]), line: i + 1}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			tb.rows = append(tb.rows, mdRow{cells: mdCells(lines[i]), line: i + 1})
		}
		for len(tb.rows) > 0 && len(tb.rows[len(tb.rows)-1].cells) < len(tb.header) {
			tb.rows = tb.rows[:len(tb.rows)-1]
		}
		tables = append(tables, tb)
	}
	return tables
}

// mdCells splits a table line into its trimmed cells; a pipe inside
// backticks belongs to its cell.
func mdCells(line string) []string {
	var cells []string
	var cur strings.Builder
	code := false
	for _, r := range strings.TrimSpace(line) {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	cells = append(cells, strings.TrimSpace(cur.String()))
	if len(cells) >= 2 {
		cells = cells[1 : len(cells)-1] // the empty text before the first pipe and after the last
	}
	for i := range cells {
		cells[i] = strings.ReplaceAll(cells[i], `\|`, "|")
	}
	return cells
}

// findTable returns the one table of doc that match accepts.
func findTable(t *testing.T, doc, name string, match func(mdTable) bool) mdTable {
	t.Helper()
	var found []mdTable
	for _, tb := range mdTables(doc) {
		if match(tb) {
			found = append(found, tb)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: found %d tables of the kind this test checks, want 1", name, len(found))
	}
	return found[0]
}

var (
	backtickRe = regexp.MustCompile("`([^`]+)`")
	fenceRe    = regexp.MustCompile("(?m)^```.*$") // a code fence pairs with no inline backtick
)

// backticked returns the texts in backticks of s, in order.
func backticked(s string) []string {
	var out []string
	s = fenceRe.ReplaceAllString(s, "")
	for _, m := range backtickRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func withoutBackticks(s string) string { return backtickRe.ReplaceAllString(s, "") }

// packageTokens returns the packages a cell names in backticks, failing the
// test for a backticked text that is no package: these cells hold claims,
// and prose goes outside backticks.
func packageTokens(t *testing.T, pkgs map[string]*codePkg, doc string, line int, col, cell string) []string {
	t.Helper()
	var names []string
	for _, tok := range backticked(cell) {
		if pkgs[tok] == nil {
			t.Errorf("%s:%d: the %q cell names `%s`, which is no package of the repository (write prose outside backticks)", doc, line, col, tok)
			continue
		}
		names = append(names, tok)
	}
	return names
}

// compareSets reports what is so (actual) that the doc does not claim
// (unsaid, a format for the name) and what the doc claims (claimed) that is
// not so (false).
func compareSets(t *testing.T, where, unsaid, wrong string, claimed, actual []string) {
	t.Helper()
	for _, a := range actual {
		if !slices.Contains(claimed, a) {
			t.Errorf("%s "+unsaid, where, "`"+a+"`")
		}
	}
	for _, c := range claimed {
		if !slices.Contains(actual, c) {
			t.Errorf("%s "+wrong, where, "`"+c+"`")
		}
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func numberWord(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return slices.Index([]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}, strings.ToLower(s))
}
