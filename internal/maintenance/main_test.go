package maintenance

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pginbox/pginbox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// counter reads a counter's value.
func counter(t *testing.T, c prometheus.Counter) int {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return int(m.GetCounter().GetValue())
}
