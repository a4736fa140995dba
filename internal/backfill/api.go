package backfill

import (
	"errors"
	"fmt"

	"github.com/pginbox/pginbox/internal/envconfig"
)

// ErrNoPass marks an error that kept a backfill pass from running at all
// (the gaps or the checkpoint could not be read). Every other error of
// [Run] and [RunLog] comes from a pass that ran and left something unfilled.
var ErrNoPass = errors.New("backfill pass did not run")

// AuthError is returned by Run when a provider refused the API key
// (401 or 403): that provider's remaining gaps were not looked up and nothing
// of it was tombstoned.
type AuthError struct {
	// Provider is the provider that refused the key.
	Provider string
	// StatusCode is the refusing HTTP status, 401 or 403.
	StatusCode int
}

// Error names the provider and the status.
func (e *AuthError) Error() string {
	return fmt.Sprintf("backfill %s: the API refused the key (HTTP %d): check %s",
		e.Provider, e.StatusCode, envconfig.APIKey.Var(e.Provider))
}

// Is lets errors.Is(err, ErrUnauthorized) match.
func (e *AuthError) Is(target error) bool { return target == ErrUnauthorized }
