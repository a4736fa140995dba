package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/internal/pgtest"
)

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestServeBusyPortNamesTheVariable: a listener that cannot open is one line
// naming the address once and the variable to change (before: "listen
// 127.0.0.1:8080: listen tcp 127.0.0.1:8080: bind: address already in use").
func TestServeBusyPortNamesTheVariable(t *testing.T) {
	t.Parallel()
	url := pgtest.NewConfig(t).URL()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // after the parallel subtests
	addr := busy.Addr().String()
	for _, tc := range []struct{ variable, other, want string }{
		{"PGINBOX_ADDR", "PGINBOX_ADMIN_ADDR", "pginbox: PGINBOX_ADDR: cannot listen on " + addr + ": address already in use (another pginbox, or another program, listens there): set PGINBOX_ADDR to a free host:port"},
		{"PGINBOX_ADMIN_ADDR", "PGINBOX_ADDR", "pginbox: PGINBOX_ADMIN_ADDR: cannot listen on " + addr + ": address already in use (another pginbox, or another program, listens there): set PGINBOX_ADMIN_ADDR to a free host:port, or to off"},
	} {
		t.Run(tc.variable, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": url, "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": "sume-secret-0123456789",
				tc.variable: addr, tc.other: "127.0.0.1:0"}
			code, _, errOut := runCLI(t, env, "serve")
			line := lastLine(errOut)
			if code != 1 || line != tc.want || strings.Count(line, addr) != 1 {
				t.Fatalf("exit %d, last line %q; want 1 and\n%q", code, line, tc.want)
			}
		})
	}
}

// TestUnreachableDatabaseIsOneLine: a server that does not answer is one
// line, without tabs or pgx's text twice, saying what to check (before:
// "database: connect: failed to connect to `user=u database=db`: \t127.0.0.1:1
// (127.0.0.1): dial error: … connection refused \t127.0.0.1:1 (127.0.0.1):
// dial error: … connection refused").
func TestUnreachableDatabaseIsOneLine(t *testing.T) {
	t.Parallel()
	const want = `pginbox: cannot connect to Postgres at 127.0.0.1:1 (database "db", user "u"): connection refused: check DATABASE_URL / is Postgres running?`
	for _, cmd := range []string{"serve", "checks", "gaps", "reconcile", "replay"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": "postgres://u:Sentinel0pw@127.0.0.1:1/db", "PGINBOX_PROVIDERS": "sume=sume",
				"PGINBOX_SECRET_SUME": "sume-secret-0123456789"}
			args := []string{cmd}
			if cmd == "replay" {
				args = append(args, "1", "--reason", "x")
			}
			code, _, errOut := runCLI(t, env, args...)
			if line := lastLine(errOut); code != 1 || line != want {
				t.Fatalf("exit %d, last line %q; want 1 and\n%q", code, line, want)
			}
			if strings.Contains(errOut, "\t") || strings.Contains(errOut, "Sentinel0pw") {
				t.Fatalf("a tab or the password: %q", errOut)
			}
		})
	}
	// migrate keeps its prefix, and through PGINBOX_DIRECT_URL names it.
	code, _, errOut := runCLI(t, map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db"}, "migrate")
	if line := lastLine(errOut); code != 1 || line != "pginbox: migrate: "+strings.TrimPrefix(want, "pginbox: ") {
		t.Fatalf("migrate: exit %d, %q", code, line)
	}
	code, _, errOut = runCLI(t, map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:1/db", "PGINBOX_DIRECT_URL": "postgres://u@127.0.0.1:1/db"}, "migrate")
	if line := lastLine(errOut); code != 1 || !strings.HasSuffix(line, "check PGINBOX_DIRECT_URL / is Postgres running?") {
		t.Fatalf("migrate, direct: exit %d, %q", code, line)
	}
}

// TestDatabaseURLOfAnotherDatabase: a mysql:// URL says a postgres:// URL is
// needed and repeats nothing of the value but its scheme (before:
// "DATABASE_URL: not a valid connection string (failed to parse as
// keyword/value (invalid keyword/value); the value is not repeated: it may
// hold a password)").
func TestDatabaseURLOfAnotherDatabase(t *testing.T) {
	t.Parallel()
	const want = "pginbox: DATABASE_URL: a mysql:// URL is not a Postgres connection string: pginbox needs postgres://user:password@host:5432/dbname (the value is not repeated: it may hold a password)"
	for _, cmd := range []string{"serve", "migrate", "checks"} {
		code, _, errOut := runCLI(t, map[string]string{"DATABASE_URL": "mysql://root:Sentinel0pw@dbhost.test/app"}, cmd)
		if line := lastLine(errOut); code != 1 || line != want {
			t.Fatalf("%s: exit %d, last line %q; want\n%q", cmd, code, line, want)
		}
		for _, part := range []string{"Sentinel0pw", "dbhost", "root"} {
			if strings.Contains(errOut, part) {
				t.Fatalf("%s: the error repeats %q: %q", cmd, part, errOut)
			}
		}
	}
}

// TestServeWarnsAtStart: serve without providers warns that every delivery
// answers 404 and names PGINBOX_PROVIDERS=name=kind; a stripe secret that is
// not whsec_… (an API key pasted by mistake) is warned about without being
// repeated; a whsec_ one is not (before: both were silent).
func TestServeWarnsAtStart(t *testing.T) {
	t.Parallel()
	const unreachable = "postgres://u@127.0.0.1:1/db" // the warnings come before the connection
	tests := []struct {
		name     string
		env      map[string]string
		want     string // "" : no warning
		sentinel string
	}{
		{"no providers", map[string]string{}, "no provider is configured, so every delivery to POST /webhooks/{provider} answers 404: set PGINBOX_PROVIDERS=name=kind (e.g. sume=sume) and PGINBOX_SECRET_<NAME>", ""},
		{"stripe API key", map[string]string{"PGINBOX_PROVIDERS": "pay=stripe", "PGINBOX_SECRET_PAY": "sk_live_Sentinel0123456789"},
			"PGINBOX_SECRET_PAY: a stripe secret does not start with whsec_", "Sentinel0123456789"},
		{"stripe API key among two", map[string]string{"PGINBOX_PROVIDERS": "pay=stripe", "PGINBOX_SECRET_PAY": "whsec_ok0123456789,rk_live_Sentinel0123456789"},
			"PGINBOX_SECRET_PAY: a stripe secret does not start with whsec_", "Sentinel0123456789"},
		{"stripe signing secret", map[string]string{"PGINBOX_PROVIDERS": "pay=stripe", "PGINBOX_SECRET_PAY": "whsec_ok0123456789"}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.env["DATABASE_URL"] = unreachable
			_, _, errOut := runCLI(t, tc.env, "serve")
			if tc.want == "" {
				if strings.Contains(errOut, `"level":"WARN"`) {
					t.Fatalf("a warning: %s", errOut)
				}
				return
			}
			if !strings.Contains(errOut, `"level":"WARN","msg":"`+tc.want) {
				t.Fatalf("no warning %q in:\n%s", tc.want, errOut)
			}
			if tc.sentinel != "" && strings.Contains(errOut, tc.sentinel) {
				t.Fatalf("the warning repeats the secret: %s", errOut)
			}
		})
	}
}

// TestUsageErrorsPrintTheCommandsUsage: a mistake inside a command prints
// the error and that command's usage line, not the whole list of commands
// (before: the 17-line global usage after the error); no command at all
// still lists them.
func TestUsageErrorsPrintTheCommandsUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args        []string
		first, next string
	}{
		{[]string{"replay"}, "pginbox: usage: replay needs an event id", "usage: pginbox replay <event_id> --reason R"},
		{[]string{"replay", "12"}, "pginbox: usage: replay needs --reason", "usage: pginbox replay <event_id> --reason R"},
		{[]string{"replay", "abc", "--reason", "x"}, `pginbox: usage: "abc" is not an event id`, "usage: pginbox replay <event_id> --reason R"},
		{[]string{"replay", "1", "2", "--reason", "x"}, "pginbox: usage: replay takes one event id", "usage: pginbox replay <event_id> --reason R"},
		{[]string{"checks", "--nope"}, "pginbox: usage: flag provided but not defined: -nope", "usage: pginbox checks [--json]"},
		{[]string{"gaps", "--limit", "0"}, "pginbox: usage: --limit must be positive", "usage: pginbox gaps [--provider P] [--json] [--limit N] [--backfill]"},
	}
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"}
	for _, tc := range tests {
		code, _, errOut := runCLI(t, env, tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		cmd := tc.args[0]
		want := []string{tc.first, tc.next, "(pginbox " + cmd + " --help lists its flags)"}
		if code != 2 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("%v: exit %d, stderr\n%s\nwant 2 and\n%s", tc.args, code, errOut, strings.Join(want, "\n"))
		}
	}
	code, _, errOut := runCLI(t, env)
	if code != 2 || !strings.Contains(errOut, "commands:") {
		t.Fatalf("no command: exit %d, %q; want the list of commands", code, errOut)
	}
}

// TestServeHelpSaysWhatEachFlagMeans: serve --help shows, for every flag,
// what it means and its default beside the variable it overrides.
func TestServeHelpSaysWhatEachFlagMeans(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	n := 0
	for _, s := range envconfig.Table {
		if s.Flag == "" {
			continue
		}
		n++
		want := s.Doc + " ($" + s.Env
		if s.Default != "" {
			want += ", default " + s.Default
		}
		if !strings.Contains(out, "-"+s.Flag+" ") || !strings.Contains(out, want+")") {
			t.Errorf("--%s: the help lacks %q", s.Flag, want+")")
		}
	}
	if n < 20 {
		t.Fatalf("%d flags", n)
	}
}

// TestChecksValuesWithoutExponents: `pginbox checks` prints values a person
// reads: four significant digits, never an exponent (before: 5.42101e-19).
func TestChecksValuesWithoutExponents(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{
		5.42101e-19: "0", 0: "0", -3e-12: "0", 1: "1", 86400: "86400", 1234567: "1234567", 0.05: "0.05",
		1.0 / 3: "0.3333", 123.456: "123.5", 0.000012346: "0.00001235", -2.5: "-2.5", 1e-8: "0.00000001", 2.5e12: "2500000000000",
	} {
		if got := fmtOpt(&v); got != want {
			t.Errorf("fmtOpt(%g) = %q, want %q", v, got, want)
		}
	}
	if got := fmtOpt(nil); got != "-" {
		t.Errorf("fmtOpt(nil) = %q", got)
	}
}

// syncBuffer is a bytes.Buffer a test reads while a command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServePrintsWhereItListens: serve says where both listeners are, as
// URLs: lines for a person when stderr is a terminal, fields of the JSON
// "pginbox serving" line otherwise (before: no URL anywhere, the console's
// address only as admin_addr).
func TestServePrintsWhereItListens(t *testing.T) {
	t.Parallel()
	url := pgtest.NewConfig(t).URL()
	urlRE := `http://127\.0\.0\.1:\d+`
	for _, terminal := range []bool{true, false} {
		t.Run(fmt.Sprint("terminal=", terminal), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": url, "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": "sume-secret-0123456789",
				"PGINBOX_ADDR": "127.0.0.1:0", "PGINBOX_ADMIN_ADDR": "127.0.0.1:0"}
			var out, errOut syncBuffer
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				done <- Run(ctx, App{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, StderrTerminal: terminal}, []string{"serve"})
			}()
			deadline := time.Now().Add(60 * time.Second)
			for !strings.Contains(errOut.String(), `"msg":"pginbox serving"`) {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("serve did not start:\n%s", errOut.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // the person's lines follow the JSON one
			cancel()
			if code := <-done; code != 0 {
				t.Fatalf("exit %d:\n%s", code, errOut.String())
			}
			said := errOut.String()
			human := regexp.MustCompile(`pginbox is listening:\n  webhooks  ` + urlRE + `/webhooks/\{provider\}   \(PGINBOX_ADDR\)\n  console   ` + urlRE + `/   \(PGINBOX_ADMIN_ADDR`)
			if human.MatchString(said) != terminal {
				t.Fatalf("terminal %v, and the lines for a person are there: %v:\n%s", terminal, !terminal, said)
			}
			structured := regexp.MustCompile(`"webhooks_url":"` + urlRE + `/webhooks/\{provider\}","console_url":"` + urlRE + `/"`)
			if !structured.MatchString(said) {
				t.Fatalf("the JSON line has no URLs:\n%s", said)
			}
		})
	}
}
