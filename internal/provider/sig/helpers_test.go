package sig

import (
	"errors"
	"testing"
)

// checkReject fails the test unless err is nil (status 0) or a *RejectError
// with exactly status and reason.
func checkReject(t testing.TB, err error, status int, reason string) {
	t.Helper()
	if status == 0 {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	var re *RejectError
	if !errors.As(err, &re) {
		t.Fatalf("got error %v (%T), want *RejectError %d %q", err, err, status, reason)
	}
	if re.Status != status || re.Reason != reason {
		t.Fatalf("got rejection %d %q, want %d %q", re.Status, re.Reason, status, reason)
	}
}
