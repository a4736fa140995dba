package runner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// listenFailure is a listener that could not be opened, told in one line that
// names the address once and the variable to change.
type listenFailure struct {
	// Var is PGINBOX_ADDR or PGINBOX_ADMIN_ADDR (Config.Addr, Config.AdminAddr).
	Var string
	// Addr is the address asked for.
	Addr string
	// Err is the error net.Listen returned.
	Err error
}

// Error returns "PGINBOX_ADDR: cannot listen on 127.0.0.1:8080: address
// already in use (another pginbox?): set PGINBOX_ADDR to a free host:port".
func (e *listenFailure) Error() string {
	reason := e.Err.Error()
	var oe *net.OpError
	var se *os.SyscallError
	switch {
	case errors.As(e.Err, &se):
		reason = se.Err.Error()
	case errors.As(e.Err, &oe) && oe.Err != nil:
		reason = oe.Err.Error()
	}
	if errors.Is(e.Err, syscall.EADDRINUSE) {
		reason += " (another pginbox, or another program, listens there)"
	}
	fix := "set " + e.Var + " to a free host:port"
	if e.Var == "PGINBOX_ADMIN_ADDR" {
		fix += ", or to off"
	}
	return fmt.Sprintf("%s: cannot listen on %s: %s: %s", e.Var, e.Addr, reason, fix)
}

// Unwrap returns the error net.Listen returned.
func (e *listenFailure) Unwrap() error { return e.Err }

// listenError is the error about the listener of variable at addr.
func listenError(variable, addr string, err error) error {
	return &listenFailure{Var: variable, Addr: addr, Err: err}
}
