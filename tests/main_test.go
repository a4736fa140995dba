package tests

import (
	"testing"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
