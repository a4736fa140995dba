// Package netfault tests what pginbox does when the network between the
// runner and PostgreSQL misbehaves, with toxiproxy (run in-process) in
// between.
package netfault

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func TestMain(m *testing.M) {
	// toxiproxy's toxics log through zerolog's global logger.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	pgtest.Main(m)
}
