package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"math/big"
	"strings"
	"testing"

	"github.com/pginbox/pginbox/internal/cli"
)

// sentinel returns n random letters and digits: a value no error text
// contains by chance.
func sentinel(t *testing.T, n int) string {
	t.Helper()
	const abc = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	b := make([]byte, n)
	for i := range b {
		x, err := rand.Int(rand.Reader, big.NewInt(int64(len(abc))))
		if err != nil {
			t.Fatal(err)
		}
		b[i] = abc[x.Int64()]
	}
	return string(b)
}

// repeats returns the first six bytes or more of secret that text repeats.
func repeats(text, secret string) string {
	for i := 0; i+6 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+6]) {
			return secret[i : i+6]
		}
	}
	return ""
}

// TestSecretErrorsNeverRepeatTheValue: for every variable that holds a
// secret, a token, a key or a URL that may carry credentials, a value
// pginbox refuses makes the command fail with an error that names the
// variable and never repeats the secret nor any six bytes of it (before:
// a GitHub key that was not PEM text was printed whole in "open <value>:
// file name too long", a URL or handler spec in quotes).
func TestSecretErrorsNeverRepeatTheValue(t *testing.T) {
	t.Parallel()
	const okDB = "postgres://pginbox@127.0.0.1:1/pginbox" // never reached: the error comes first
	gh := map[string]string{"DATABASE_URL": okDB, "PGINBOX_PROVIDERS": "gh=github", "PGINBOX_SECRET_GH": strings.Repeat("g", 32),
		"PGINBOX_API_URL_GH": "https://api.github.test", "PGINBOX_GITHUB_APP_ID_GH": "42"}
	with := func(base map[string]string, kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	s := func() string { return sentinel(t, 48) }
	type tc struct {
		name, variable, secret string
		env                    map[string]string
		command                string
	}
	var cases []tc
	add := func(name, variable, secret string, env map[string]string, command ...string) {
		cmd := "serve"
		if len(command) > 0 {
			cmd = command[0]
		}
		cases = append(cases, tc{name, variable, secret, env, cmd})
	}
	x := s()
	add("provider secret too short", "PGINBOX_SECRET_SUME", x[:12], map[string]string{"DATABASE_URL": okDB, "PGINBOX_PROVIDERS": "sume=sume", "PGINBOX_SECRET_SUME": x[:12]})
	x = s()
	add("standardwebhooks secret not base64", "PGINBOX_SECRET_SW", x, map[string]string{"DATABASE_URL": okDB, "PGINBOX_PROVIDERS": "sw=standardwebhooks", "PGINBOX_SECRET_SW": "whsec_!" + x})
	x = s()
	add("admin token too short", "PGINBOX_ADMIN_TOKEN", x[:10], map[string]string{"DATABASE_URL": okDB, "PGINBOX_ADMIN_TOKEN": x[:10]})
	x = s()
	b64 := base64.StdEncoding.EncodeToString([]byte(x + x + x + x + x + x))
	add("github key: base64 of something else", "PGINBOX_API_KEY_GH", b64, with(gh, "PGINBOX_API_KEY_GH", b64))
	x = s()
	add("github key: quoted garbage", "PGINBOX_API_KEY_GH", x, with(gh, "PGINBOX_API_KEY_GH", `"`+x+`"`))
	x = s()
	add("github key: BOM then garbage", "PGINBOX_API_KEY_GH", x, with(gh, "PGINBOX_API_KEY_GH", "\uFEFF"+strings.Repeat(x, 8)))
	x = s()
	add("github key: PEM that is not a key", "PGINBOX_API_KEY_GH", x,
		with(gh, "PGINBOX_API_KEY_GH", "-----BEGIN RSA PRIVATE KEY-----\n"+base64.StdEncoding.EncodeToString([]byte(x))+"\n-----END RSA PRIVATE KEY-----\n"))
	x = s()
	add("github key: a file that is not there", "PGINBOX_API_KEY_GH", x, with(gh, "PGINBOX_API_KEY_GH", "/run/secrets/"+x+".pem"))
	x = s()
	add("API URL: a key pasted in it", "PGINBOX_API_URL_GH", x, with(gh, "PGINBOX_API_URL_GH", "sk_live_"+x))
	x = s()
	add("API URL: credentials", "PGINBOX_API_URL_GH", x, with(gh, "PGINBOX_API_URL_GH", "https://app:"+x+"@api.github.test"))
	x = s()
	add("API URL: plain http to another host", "PGINBOX_API_URL_GH", x, with(gh, "PGINBOX_API_URL_GH", "http://api.github.test/?token="+x))
	x = s()
	add("status API URL: credentials", "PGINBOX_API_URL_SUME", x, map[string]string{"DATABASE_URL": okDB, "PGINBOX_PROVIDERS": "sume=sume",
		"PGINBOX_SECRET_SUME": strings.Repeat("s", 32), "PGINBOX_API_URL_SUME": "https://u:" + x + "@api.sume.test"})
	x = s()
	add("handler URL: not http(s)", "PGINBOX_HANDLER", x, map[string]string{"DATABASE_URL": okDB, "PGINBOX_HANDLER": "http:ftp://u:" + x + "@hooks.test/in"})
	x = s()
	add("handler: a URL without http:", "PGINBOX_HANDLER", x, map[string]string{"DATABASE_URL": okDB, "PGINBOX_HANDLER": "https://hooks.test/in?token=" + x})
	x = s()
	add("DATABASE_URL that does not parse", "DATABASE_URL", x, map[string]string{"DATABASE_URL": "postgres://u:" + x + "@127.0.0.1:bad/db"})
	x = s()
	add("DATABASE_URL, @ in the password", "DATABASE_URL", x[:20]+"@"+x[20:], map[string]string{"DATABASE_URL": "postgres://u:" + x[:20] + "@" + x[20:] + "@127.0.0.1:bad/db"})
	x = s()
	add("PGINBOX_DIRECT_URL that does not parse", "PGINBOX_DIRECT_URL", x,
		map[string]string{"DATABASE_URL": okDB, "PGINBOX_DIRECT_URL": "postgres://u:" + x + "@127.0.0.1:bad/db"}, "migrate")
	x = s()
	add("alert secret without whsec_", "PGINBOX_ALERT_SECRET", x, map[string]string{"DATABASE_URL": okDB,
		"PGINBOX_ALERT_URL": "https://alerts.test/in", "PGINBOX_ALERT_SECRET": base64.StdEncoding.EncodeToString([]byte(x))})
	x = s()
	add("alert secret not base64", "PGINBOX_ALERT_SECRET", x, map[string]string{"DATABASE_URL": okDB,
		"PGINBOX_ALERT_URL": "https://alerts.test/in", "PGINBOX_ALERT_SECRET": "whsec_!" + x})
	x = s()
	add("alert secret too short", "PGINBOX_ALERT_SECRET", x[:8], map[string]string{"DATABASE_URL": okDB,
		"PGINBOX_ALERT_URL": "https://alerts.test/in", "PGINBOX_ALERT_SECRET": "whsec_" + base64.StdEncoding.EncodeToString([]byte(x[:8]))})
	x = s()
	add("alert URL: a Slack URL without https", "PGINBOX_ALERT_URL", x, map[string]string{"DATABASE_URL": okDB,
		"PGINBOX_ALERT_URL": "hooks.slack.test/services/" + x})
	x = s()
	add("alert routing key missing", "PGINBOX_ALERT_ROUTING_KEY", x, map[string]string{"DATABASE_URL": okDB,
		"PGINBOX_ALERT_URL": "https://events.pagerduty.test/v2/enqueue?k=" + x, "PGINBOX_ALERT_FORMAT": "pagerduty"})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := cli.Run(context.Background(), cli.App{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return c.env[k] }}, []string{c.command})
			said := out.String() + errOut.String()
			if code == 0 {
				t.Fatalf("%s accepted: %s", c.command, said)
			}
			if !strings.Contains(said, c.variable) {
				t.Errorf("the error does not name %s: %s", c.variable, said)
			}
			if r := repeats(said, c.secret); r != "" {
				t.Errorf("the error repeats %q of the value: %s", r, said)
			}
		})
	}
}
