package process

import (
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

// TestMain stops the throwaway Postgres cluster the harness may have started.
func TestMain(m *testing.M) { pgtest.Main(m) }
