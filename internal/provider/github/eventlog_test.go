package github

import (
	"context"
	"testing"
	"time"

	"github.com/pginbox/pginbox/internal/provider/github/githubfake"
)

// TestGitHubJWT: the app JWT is RS256 with iss = the app id, valid nine
// minutes, reused while it has more than a minute left and renewed after.
func TestGitHubJWT(t *testing.T) {
	t.Parallel()
	key, pemText := githubfake.AppKey(t)
	f := githubfake.New("42", &key.PublicKey)
	defer f.Close()
	el, err := NewEventLog("gh", f.URL, "42", pemText)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	el.now = func() time.Time { return clock }
	a, _ := el.token()
	clock = clock.Add(7 * time.Minute)
	b, _ := el.token()
	clock = clock.Add(90 * time.Second)
	c, _ := el.token()
	if a != b || b == c {
		t.Fatalf("token reuse/renewal: a==b %v, b==c %v", a == b, b == c)
	}
	el.now = time.Now
	el.jwt = ""
	if _, err := el.Page(context.Background(), time.Time{}, ""); err != nil {
		t.Fatalf("the fake refused the JWT: %v", err)
	}
	for name, tc := range map[string][2]string{"app id": {"x", pemText}, "key": {"42", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----"}, "no key": {"42", ""}} {
		if _, err := NewEventLog("gh", f.URL, tc[0], tc[1]); err == nil {
			t.Errorf("bad %s accepted", name)
		}
	}
}
