package envconfig

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		check func(t *testing.T, s Values)
	}{
		{"unset: nothing set, the table's defaults", nil, func(t *testing.T, s Values) {
			if s.Get("PGINBOX_LISTEN") != false || s.Get("PGINBOX_MIGRATE") != false || s.IsSet("PGINBOX_WORKERS") || s.Get("PGINBOX_WORKERS") != 8 ||
				s.IsSet("PGINBOX_LEASE") || s.Duration("PGINBOX_LEASE") != 5*time.Minute ||
				s.DataDir() != ".pginbox" || s.Duration("PGINBOX_HTTP_TIMEOUT") != 30*time.Second || s.LogLevel() != slog.LevelInfo {
				t.Fatalf("%+v", s)
			}
		}},
		{"PGINBOX_LISTEN and PGINBOX_MIGRATE false", map[string]string{"PGINBOX_LISTEN": "false", "PGINBOX_MIGRATE": "0"}, func(t *testing.T, s Values) {
			// Stored negated: PollOnly and SkipMigrate.
			if s.Get("PGINBOX_LISTEN") != true || s.Get("PGINBOX_MIGRATE") != true {
				t.Fatalf("PollOnly %v, SkipMigrate %v; want both true", s.Get("PGINBOX_LISTEN"), s.Get("PGINBOX_MIGRATE"))
			}
		}},
		{"durations, days and off", map[string]string{"PGINBOX_LEASE": "90s", "PGINBOX_KEEP_PAYLOAD": "7d", "PGINBOX_PRUNE_EVERY": "off"}, func(t *testing.T, s Values) {
			if s.Duration("PGINBOX_LEASE") != 90*time.Second || s.Duration("PGINBOX_KEEP_PAYLOAD") != 7*24*time.Hour || s.Duration("PGINBOX_PRUNE_EVERY") != -1 {
				t.Fatalf("lease %s, keep payload %s, prune every %s", s.Duration("PGINBOX_LEASE"), s.Duration("PGINBOX_KEEP_PAYLOAD"), s.Duration("PGINBOX_PRUNE_EVERY"))
			}
		}},
		{"providers in order, secrets trimmed, none required", map[string]string{
			"PGINBOX_PROVIDERS": " sume=sume , gh-app=github", "PGINBOX_SECRET_SUME": " a, ,b ",
		}, func(t *testing.T, s Values) {
			want := []Provider{
				{Name: "sume", Kind: "sume", SecretVar: "PGINBOX_SECRET_SUME", Secrets: []string{"a", "b"}},
				{Name: "gh-app", Kind: "github", SecretVar: "PGINBOX_SECRET_GH_APP"},
			}
			if !reflect.DeepEqual(s.Providers, want) {
				t.Fatalf("providers %+v, want %+v", s.Providers, want)
			}
		}},
		{"PGINBOX_DIRECT_URL, else its old name PGINBOX_LISTEN_URL", map[string]string{"PGINBOX_LISTEN_URL": "postgres://old"}, func(t *testing.T, s Values) {
			if s.String("PGINBOX_DIRECT_URL") != "postgres://old" {
				t.Fatalf("DirectURL %q from PGINBOX_LISTEN_URL alone", s.String("PGINBOX_DIRECT_URL"))
			}
		}},
		{"PGINBOX_DIRECT_URL wins over the old name", map[string]string{"PGINBOX_DIRECT_URL": "postgres://new", "PGINBOX_LISTEN_URL": "postgres://old"}, func(t *testing.T, s Values) {
			if s.String("PGINBOX_DIRECT_URL") != "postgres://new" {
				t.Fatalf("DirectURL %q", s.String("PGINBOX_DIRECT_URL"))
			}
		}},
		{"endpoints read on demand", map[string]string{"PGINBOX_API_URL_LEGACY_SYS": "https://x.test", "PGINBOX_API_KEY_LEGACY_SYS": "k"}, func(t *testing.T, _ Values) {
			env := map[string]string{"PGINBOX_API_URL_LEGACY_SYS": "https://x.test", "PGINBOX_API_KEY_LEGACY_SYS": "k"}
			if u, k := Endpoints(func(k string) string { return env[k] })("legacy-sys"); u != "https://x.test" || k != "k" {
				t.Fatalf("endpoint %q %q", u, k)
			}
		}},
		{"a listed provider's families read once, with the rest", map[string]string{
			"PGINBOX_PROVIDERS": "gh=github", "PGINBOX_API_URL_GH": "https://api.github.test", "PGINBOX_API_KEY_GH": "k", "PGINBOX_GITHUB_APP_ID_GH": "42",
		}, func(t *testing.T, s Values) {
			if u, k := s.Endpoint("gh"); u != "https://api.github.test" || k != "k" || s.AppID("gh") != "42" || s.Kinds()["gh"] != "github" {
				t.Fatalf("endpoint %q %q, app id %q, kinds %v", u, k, s.AppID("gh"), s.Kinds())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Read(func(k string) string { return tc.env[k] }, Table)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     map[string]string
		wantVar string
	}{
		{map[string]string{"PGINBOX_ADDR": "8080"}, "PGINBOX_ADDR"},
		{map[string]string{"PGINBOX_ADMIN_ADDR": "8081"}, "PGINBOX_ADMIN_ADDR"},
		{map[string]string{"PGINBOX_ADMIN_HOSTS": "ok.example,http://evil/"}, "PGINBOX_ADMIN_HOSTS"},
		{map[string]string{"PGINBOX_ADMIN_TOKEN": "short"}, "PGINBOX_ADMIN_TOKEN"},
		{map[string]string{"PGINBOX_ADMIN_TRUSTED_PROXIES": "10.0.0.0/8,proxy.internal"}, "PGINBOX_ADMIN_TRUSTED_PROXIES"},
		{map[string]string{"PGINBOX_PROVIDERS": "sume"}, "PGINBOX_PROVIDERS"},
		{map[string]string{"PGINBOX_PROVIDERS": "Sume=sume"}, "PGINBOX_PROVIDERS"},
		{map[string]string{"PGINBOX_PROVIDERS": "a=sume,a=stripe"}, "PGINBOX_PROVIDERS"},
		{map[string]string{"PGINBOX_LEASE": "off"}, "PGINBOX_LEASE"},
		{map[string]string{"PGINBOX_LEASE": "-1s"}, "PGINBOX_LEASE"},
		{map[string]string{"PGINBOX_KEEP_KEYS": "7d"}, "PGINBOX_KEEP_KEYS"},
		{map[string]string{"PGINBOX_WORKERS": "0"}, "PGINBOX_WORKERS"},
		{map[string]string{"PGINBOX_BATCH": "10001"}, "PGINBOX_BATCH"},
		{map[string]string{"PGINBOX_MAX_BODY": "-5"}, "PGINBOX_MAX_BODY"},
		{map[string]string{"PGINBOX_LISTEN": "maybe"}, "PGINBOX_LISTEN"},
		{map[string]string{"PGINBOX_HTTP_TIMEOUT": "0s"}, "PGINBOX_HTTP_TIMEOUT"},
		{map[string]string{"PGINBOX_LOG_LEVEL": "loud"}, "PGINBOX_LOG_LEVEL"},
		{map[string]string{"PGINBOX_LEASE_MODE": "lease"}, "PGINBOX_LEASE_MODE"},
	}
	for _, tc := range tests {
		t.Run(tc.wantVar, func(t *testing.T) {
			t.Parallel()
			_, err := Read(func(k string) string { return tc.env[k] }, Table)
			var e *Error
			if !errors.As(err, &e) || e.Var != tc.wantVar || !strings.HasPrefix(err.Error(), tc.wantVar+": ") {
				t.Fatalf("%v: error %v, want an *Error for %s", tc.env, err, tc.wantVar)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1d12h": 36 * time.Hour, "5m": 5 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := ParseDuration("xd"); err == nil {
		t.Error(`ParseDuration("xd") accepted`)
	}
}

// TestProvidersSharingAVariable: a-b and a_b would read one
// PGINBOX_SECRET_A_B (and one API URL and key): refused, naming both.
func TestProvidersSharingAVariable(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PGINBOX_PROVIDERS": "a-b=github,a_b=stripe", "PGINBOX_SECRET_A_B": "one-secret-0123456789"}
	_, err := Read(func(k string) string { return env[k] }, Table)
	var e *Error
	if !errors.As(err, &e) || e.Var != "PGINBOX_PROVIDERS" ||
		!strings.Contains(err.Error(), `providers "a-b" and "a_b" would share PGINBOX_SECRET_A_B`) {
		t.Fatalf("error %v, want a refusal naming a-b, a_b and PGINBOX_SECRET_A_B", err)
	}
}
