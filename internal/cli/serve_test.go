package cli

import (
	"strings"
	"testing"
)

// TestServeConfigErrors: invalid configuration exits non-zero with one line
// naming the problem, before touching any database.
func TestServeConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown kind", map[string]string{"PGINBOX_PROVIDERS": "x=paypal", "PGINBOX_SECRET_X": "s"}, nil, `unknown kind "paypal"`},
		{"provider without secret", map[string]string{"PGINBOX_PROVIDERS": "my-sume=sume"}, nil, "PGINBOX_SECRET_MY_SUME: provider \"my-sume\" has no secret"},
		{"malformed provider list", map[string]string{"PGINBOX_PROVIDERS": "sume"}, nil, "PGINBOX_PROVIDERS"},
		{"bad duration", map[string]string{"PGINBOX_LEASE": "five minutes"}, nil, "PGINBOX_LEASE: \"five minutes\" is not a positive duration"},
		{"bad workers", map[string]string{"PGINBOX_WORKERS": "0"}, nil, "PGINBOX_WORKERS"},
		{"bad handler", map[string]string{"PGINBOX_HANDLER": "kafka:topic"}, nil, "PGINBOX_HANDLER"},
		{"bad flag value", nil, []string{"--lease", "-1s"}, "PGINBOX_LEASE"},
		{"bad standardwebhooks secret", map[string]string{"PGINBOX_PROVIDERS": "sw=standardwebhooks", "PGINBOX_SECRET_SW": "whsec_%%%"}, nil, "PGINBOX_SECRET_SW"},
		{"bad log level", map[string]string{"PGINBOX_LOG_LEVEL": "loud"}, nil, "PGINBOX_LOG_LEVEL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
			for k, v := range tc.env {
				env[k] = v
			}
			code, _, errOut := runCLI(t, env, append([]string{"serve"}, tc.args...)...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("exit %d, stderr %q; want one line containing %q", code, errOut, tc.want)
			}
			if strings.Contains(errOut, "whsec_%%%") {
				t.Fatal("the error repeats a secret")
			}
		})
	}
}

// TestServeRetentionConfig: keys must outlive payloads, in any spelling.
func TestServeRetentionConfig(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{
		{"PGINBOX_KEEP_PAYLOAD": "30d", "PGINBOX_KEEP_KEYS": "30d"},
		{"PGINBOX_KEEP_PAYLOAD": "500d"},
		{"PGINBOX_KEEP_KEYS": "7d"},
	} {
		env["DATABASE_URL"] = "postgres://nobody@127.0.0.1:1/none"
		code, _, errOut := runCLI(t, env, "serve")
		if code == 0 || !strings.Contains(errOut, "PGINBOX_KEEP_KEYS: must be longer than PGINBOX_KEEP_PAYLOAD") {
			t.Fatalf("%v: exit %d, %q", env, code, errOut)
		}
	}
}
