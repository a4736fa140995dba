package sig

import (
	"net/http"
	"testing"
)

func TestRejectError(t *testing.T) {
	t.Parallel()
	err := Unauthorized(ReasonSignatureMismatch)
	if got, want := err.Error(), "rejected with 401: signature mismatch"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	checkReject(t, BadRequest(ReasonKeyMissing), http.StatusBadRequest, "idempotency key missing")
}
