package runner

import (
	"context"
	"strings"
	"testing"
	"time"

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
	if err := c.validate(); err != nil {
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
