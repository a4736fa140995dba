package console

import (
	"net/http"
	"strings"
)

// operator names who asked for an action, for the audit rows
// (webhooks.replays.replayed_by, paused_providers.paused_by,
// provider_pauses.by_role): how the request authenticated (the bearer
// token or a session of the login form; the console has one token, so
// that is its label) and the client's address. The database role alone
// would name the runner for every operator. The address is the one the
// failure limiter counts: the client behind a trusted proxy, else the peer.
func (c *Console) operator(r *http.Request) string {
	how := "session"
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		how = "token"
	}
	addr, _ := c.auth.Client(r)
	who := "console " + how + " from " + addr
	if len(who) > 200 { // the SQL functions' bound on actor
		who = who[:200]
	}
	return who
}
