package runner

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/backfill"
	"github.com/pginbox/pginbox/internal/envconfig"
	"github.com/pginbox/pginbox/runner/verify"
)

// TestNewValidatesConfig: New refuses a Config it cannot run with before it
// connects anywhere.
func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"address", Config{Addr: "8080"}, "Addr"},
		{"workers", Config{Workers: 5000}, "Workers"},
		{"negative lease", Config{Lease: -time.Second}, "Lease"},
		{"unknown SQL lease", Config{LeaseMode: "lease"}, "LeaseMode"},
		{"keys not longer than payloads", Config{KeepPayload: 10 * 24 * time.Hour, KeepKeys: 5 * 24 * time.Hour}, "KeepKeys"},
		{"provider without verifier", Config{Providers: map[string]verify.Provider{"x": nil}}, `provider "x"`},
		{"open console on all interfaces", Config{AdminAddr: "0.0.0.0:8081"}, "AdminToken is empty"},
		{"open console on a public address", Config{AdminAddr: "192.0.2.10:8081"}, "AdminToken is empty"},
		{"open console with no host", Config{AdminAddr: ":8081"}, "AdminToken is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(context.Background(), tc.cfg, "postgres://nobody@127.0.0.1:1/none", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestLoopbackAddr: the addresses an open console may listen on.
func TestLoopbackAddr(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8081": true, "127.0.0.2:8081": true, "[::1]:8081": true, "localhost:8081": true,
		"0.0.0.0:8081": false, ":8081": false, "[::]:8081": false, "192.0.2.10:8081": false, "example.com:8081": false,
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestConfigZeroValue: the zero Config validates once its defaults are
// applied: listening, migrating, 8 workers.
func TestConfigZeroValue(t *testing.T) {
	t.Parallel()
	c := Config{}.withDefaults()
	if err := c.validate(discard); err != nil {
		t.Fatal(err)
	}
	if c.PollOnly || c.SkipMigrate || c.Workers != 8 || c.Addr != "127.0.0.1:8080" || c.Lease != 5*time.Minute {
		t.Fatalf("defaults %+v", c)
	}
}

// TestConfigFromEnv: every provider needs a known kind and a secret; the
// backfill APIs are set up from the same environment.
func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"PGINBOX_PROVIDERS": "sume=sume,gh=github", "PGINBOX_SECRET_SUME": "sume-secret-0123456789", "PGINBOX_SECRET_GH": "gh-secret-0123456789",
		"PGINBOX_API_URL_SUME": "https://api.sume.test", "PGINBOX_LISTEN": "false",
	}
	c, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Providers) != 2 || c.Providers["gh"].Kind() != "github" || !c.PollOnly || c.backfill["sume"] == nil {
		t.Fatalf("config %+v", c)
	}
	for _, bad := range []map[string]string{
		{"PGINBOX_PROVIDERS": "x=paypal", "PGINBOX_SECRET_X": "s"},
		{"PGINBOX_PROVIDERS": "x=sume"},
		{"PGINBOX_HANDLER": "kafka:t"},
		{"PGINBOX_PROVIDERS": "gh=github", "PGINBOX_SECRET_GH": "gh-secret-0123456789", "PGINBOX_API_URL_GH": "https://api.github.test"},
		{"PGINBOX_PROVIDERS": "x=sume", "PGINBOX_SECRET_X": "demo-secret"},
	} {
		if _, err := ConfigFromEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
}

// TestDefaultConfig: the defaults the settings table declares, as the
// fields document them.
func TestDefaultConfig(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	want := Config{
		Addr: "127.0.0.1:8080", AdminAddr: "127.0.0.1:8081", ReadHeaderTimeout: 10 * time.Second, MaxBody: 1 << 20,
		Workers: 8, BatchSize: 100, Lease: 5 * time.Minute, PollInterval: time.Second, NotifyInterval: 50 * time.Millisecond,
		ListenPing: 10 * time.Second, ReconcileEvery: time.Minute, ChecksEvery: time.Minute, ShutdownTimeout: 30 * time.Second,
		HandlerTimeout: 5 * time.Minute, KeepPayload: 30 * 24 * time.Hour, KeepKeys: 400 * 24 * time.Hour,
		PruneEvery: time.Hour, HistoryEvery: time.Second, IngestTimeout: 10 * time.Second, IngestBatch: 64, BackfillTimeout: 2 * time.Minute, BackfillLookback: 72 * time.Hour,
		AlertFormat: "pginbox",
		Providers:   map[string]verify.Provider{},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("DefaultConfig()\n got %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestSettingsTableFields: every Field and Builds of the settings table is a
// Config field, of the type its row reads; every exported Config field has
// a row (but ListenURL, the deprecated Go name of DirectURL); ConfigFromEnv
// sets each variable's field, and leaves the others zero (their defaults).
func TestSettingsTableFields(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Config]()
	rows := map[string]bool{"ListenURL": true}
	for _, s := range envconfig.Table {
		for _, name := range []string{s.Field, s.Builds} {
			if name == "" {
				continue
			}
			rows[name] = true
			if _, ok := typ.FieldByName(name); !ok {
				t.Errorf("%s: no Config field %s", s.Env, name)
			}
		}
	}
	for f := range typ.Fields() {
		if f.IsExported() && !rows[f.Name] {
			t.Errorf("Config.%s has no row in the settings table", f.Name)
		}
	}
	// Every variable set to a valid value lands in its field.
	env := map[string]string{
		"PGINBOX_ADDR": "127.0.0.1:9", "PGINBOX_ADMIN_ADDR": "off", "PGINBOX_ADMIN_HOSTS": "A.example", "PGINBOX_ADMIN_TOKEN": "0123456789abcdef",
		"PGINBOX_ADMIN_TRUSTED_PROXIES": " 10.1.2.3/8, fd00::1/8 ,192.0.2.1,::ffff:172.16.0.0/108",
		"PGINBOX_MAX_BODY":              "7", "PGINBOX_INGEST_TIMEOUT": "1s", "PGINBOX_LEASE_MODE": "two-phase", "PGINBOX_HANDLER_TIMEOUT": "2s",
		"PGINBOX_WORKERS": "3", "PGINBOX_BATCH": "4", "PGINBOX_LEASE": "3s", "PGINBOX_POLL_INTERVAL": "4s", "PGINBOX_NOTIFY_INTERVAL": "5s",
		"PGINBOX_LISTEN": "false", "PGINBOX_DIRECT_URL": "postgres://d", "PGINBOX_LISTEN_PING": "off", "PGINBOX_MIGRATE": "false",
		"PGINBOX_SHUTDOWN_TIMEOUT": "6s", "PGINBOX_RECONCILE_EVERY": "off", "PGINBOX_CHECKS_EVERY": "7s", "PGINBOX_PRUNE_EVERY": "8s",
		"PGINBOX_KEEP_PAYLOAD": "1d", "PGINBOX_KEEP_KEYS": "2d", "PGINBOX_BACKFILL_TIMEOUT": "9s", "PGINBOX_BACKFILL_LOOKBACK": "1h",
	}
	c, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Addr: "127.0.0.1:9", AdminAddr: "off", AdminHosts: []string{"a.example"}, AdminToken: "0123456789abcdef",
		AdminTrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"),
			netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("172.16.0.0/12")},
		MaxBody: 7, IngestTimeout: time.Second, LeaseMode: "two-phase", HandlerTimeout: 2 * time.Second,
		Workers: 3, BatchSize: 4, Lease: 3 * time.Second, PollInterval: 4 * time.Second, NotifyInterval: 5 * time.Second,
		PollOnly: true, DirectURL: "postgres://d", ListenPing: -1, SkipMigrate: true,
		ShutdownTimeout: 6 * time.Second, ReconcileEvery: -1, ChecksEvery: 7 * time.Second, PruneEvery: 8 * time.Second,
		KeepPayload: 24 * time.Hour, KeepKeys: 48 * time.Hour, BackfillTimeout: 9 * time.Second, BackfillLookback: time.Hour,
		Providers: map[string]verify.Provider{}, backfill: map[string]backfill.StatusAPI{}, logs: map[string]backfill.EventLog{},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("ConfigFromEnv\n got %+v\nwant %+v", c, want)
	}
}

// TestValidateNamesTheSetting: one rule, two names: Validate names the
// Config field a Go program set, ConfigFromEnv the variable.
func TestValidateNamesTheSetting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg       Config
		env       map[string]string
		field, vr string
	}{
		{Config{Workers: 2000}, map[string]string{"PGINBOX_WORKERS": "2000"}, "config: Workers 2000 is not a whole number from 1 to 1024", `PGINBOX_WORKERS: "2000" is not`},
		{Config{KeepKeys: time.Hour}, map[string]string{"PGINBOX_KEEP_KEYS": "1h"}, "config: KeepKeys must be longer than KeepPayload", "PGINBOX_KEEP_KEYS: must be longer than PGINBOX_KEEP_PAYLOAD"},
		{Config{AdminToken: "short-secret"}, map[string]string{"PGINBOX_ADMIN_TOKEN": "short-secret"}, "config: AdminToken is shorter than 16 characters", "PGINBOX_ADMIN_TOKEN: is shorter than 16 characters"},
		{Config{AdminAddr: ":8081"}, map[string]string{"PGINBOX_ADMIN_ADDR": ":8081"}, `config: AdminAddr ":8081" is not a loopback address and AdminToken is empty`, `PGINBOX_ADMIN_ADDR: ":8081" is not a loopback address and PGINBOX_ADMIN_TOKEN is empty`},
		{Config{Lease: -time.Second}, map[string]string{"PGINBOX_LEASE": "-1s"}, "config: Lease -1s is not a positive duration", `PGINBOX_LEASE: "-1s" is not a positive duration`},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			t.Parallel()
			if err := tc.cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.field) {
				t.Errorf("Validate: %v, want %q", err, tc.field)
			}
			_, err := ConfigFromEnv(func(k string) string { return tc.env[k] })
			if err == nil || !strings.HasPrefix(err.Error(), tc.vr) {
				t.Errorf("ConfigFromEnv: %v, want %q", err, tc.vr)
			}
			if err != nil && strings.Contains(err.Error(), "short-secret") {
				t.Error("the error repeats a secret")
			}
		})
	}
}

// TestConfigFromEnvSquareURL: kind square signs the URL it posts to, so a
// square provider without PGINBOX_URL_<NAME> (or with one that is not an
// absolute http(s) URL) is a start-up error naming that variable, never the
// secret; other kinds ignore the variable.
func TestConfigFromEnvSquareURL(t *testing.T) {
	t.Parallel()
	const key = "sq0wsk-signature-key-0123"
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string // "" when accepted
	}{
		{"square with its URL", map[string]string{"PGINBOX_PROVIDERS": "my-sq=square", "PGINBOX_SECRET_MY_SQ": key,
			"PGINBOX_URL_MY_SQ": "https://hooks.example.com/webhooks/my-sq"}, ""},
		{"square without its URL", map[string]string{"PGINBOX_PROVIDERS": "my-sq=square", "PGINBOX_SECRET_MY_SQ": key}, "PGINBOX_URL_MY_SQ"},
		{"square with a relative URL", map[string]string{"PGINBOX_PROVIDERS": "my-sq=square", "PGINBOX_SECRET_MY_SQ": key,
			"PGINBOX_URL_MY_SQ": "/webhooks/my-sq"}, "PGINBOX_URL_MY_SQ"},
		{"square with a short key", map[string]string{"PGINBOX_PROVIDERS": "my-sq=square", "PGINBOX_SECRET_MY_SQ": "short",
			"PGINBOX_URL_MY_SQ": "https://hooks.example.com/webhooks/my-sq"}, "PGINBOX_SECRET_MY_SQ"},
		{"slack ignores a URL", map[string]string{"PGINBOX_PROVIDERS": "sl=slack", "PGINBOX_SECRET_SL": key,
			"PGINBOX_URL_SL": "not a url"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ConfigFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantVar == "" {
				if err != nil || len(c.Providers) != 1 {
					t.Fatalf("ConfigFromEnv = %v, %v", c.Providers, err)
				}
				return
			}
			var envErr *envconfig.Error
			if !errors.As(err, &envErr) || envErr.Var != tt.wantVar || strings.Contains(err.Error(), key) {
				t.Fatalf("ConfigFromEnv error %v, want one naming %s (and never the key)", err, tt.wantVar)
			}
		})
	}
}

// TestValidateAlsoNamesTheVariable: an error about a Config field names,
// after the field, the variable that sets it from the environment (before:
// `config: AdminAddr "0.0.0.0:8081" is not a loopback address and
// AdminToken is empty: set PGINBOX_ADMIN_TOKEN, or listen on 127.0.0.1`
// never named PGINBOX_ADMIN_ADDR, and `config: Workers 2000 …` no variable).
func TestValidateAlsoNamesTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{AdminAddr: "0.0.0.0:8081"}, `config: AdminAddr "0.0.0.0:8081" is not a loopback address and AdminToken is empty: ` +
			`set AdminToken (PGINBOX_ADMIN_TOKEN), or listen on 127.0.0.1 (AdminAddr, PGINBOX_ADMIN_ADDR)`},
		{Config{Workers: 2000}, "config: Workers 2000 is not a whole number from 1 to 1024 (PGINBOX_WORKERS)"},
		{Config{Addr: "8080"}, `(PGINBOX_ADDR)`},
		{Config{KeepKeys: time.Hour}, "(PGINBOX_KEEP_KEYS)"},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want %q", err, tc.want)
		}
	}
}
