package database

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// UnreachableError is a failure to connect to the server a variable
// (DATABASE_URL, PGINBOX_DIRECT_URL) names, told in one line: where,
// why (once, however many addresses pgx tried) and what to check. It
// unwraps to pgx's *pgconn.ConnectError.
type UnreachableError struct {
	// Var is the variable that holds the connection string.
	Var string
	// Where is host:port (or the socket folder), database and user.
	Where string
	// Reason is the first attempt's failure: "connection refused", or the
	// server's message with its SQLSTATE.
	Reason string
	// Err is pgx's error.
	Err error
}

// Error returns "cannot connect to Postgres at <where>: <reason>: check
// <Var> / is Postgres running?".
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot connect to Postgres at %s: %s: check %s / is Postgres running?", e.Where, e.Reason, e.Var)
}

// Unwrap returns pgx's error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Unreachable returns err as an [*UnreachableError] naming variable when
// it is pgx's failure to connect, else err unchanged. pgx's own text spans
// lines (one per address and TLS mode tried, with tabs) and repeats itself;
// this keeps the first reason. It never holds the password.
func Unreachable(variable string, err error) error {
	var ce *pgconn.ConnectError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	where := "the server"
	if c := ce.Config; c != nil {
		host := c.Host
		if !strings.HasPrefix(host, "/") {
			host = net.JoinHostPort(host, fmt.Sprint(c.Port))
		}
		where = fmt.Sprintf("%s (database %q, user %q)", host, c.Database, c.User)
	}
	return &UnreachableError{Var: variable, Where: where, Reason: connectReason(ce), Err: err}
}

// connectReason is why a connection failed, in a few words.
func connectReason(ce *pgconn.ConnectError) string {
	var pe *pgconn.PgError
	var se *os.SyscallError
	var de *net.DNSError
	switch {
	case errors.As(ce, &pe):
		return fmt.Sprintf("%s (SQLSTATE %s)", pe.Message, pe.Code)
	case errors.As(ce, &de):
		return "host " + de.Name + " not found"
	case errors.As(ce, &se):
		return se.Err.Error()
	case errors.Is(ce, context.DeadlineExceeded):
		return "timed out"
	}
	var ne net.Error
	if errors.As(ce, &ne) && ne.Timeout() {
		return "timed out"
	}
	// The first attempt's text, without its "address (host): " prefix.
	text := strings.TrimSpace(strings.SplitN(ce.Unwrap().Error(), "\n", 2)[0])
	if i := strings.Index(text, "): "); i >= 0 {
		text = text[i+3:]
	}
	return text
}
