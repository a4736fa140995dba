package pginbox

import (
	_ "embed"
	"strings"
)

//go:embed docs/reference.md
var referenceDoc string

// CheckRemedies returns, per anomaly check name, what to do when it fires:
// the last column of the checks table in docs/reference.md (the one place
// they are written), for the console to show next to a breach.
func CheckRemedies() map[string]string {
	out := map[string]string{}
	_, table, ok := strings.Cut(referenceDoc, "| check | family | what it means | default range | what to do when it fires |")
	if !ok {
		return out
	}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 5 {
			continue
		}
		out[strings.Trim(cells[0], "`")] = strings.TrimSpace(cells[len(cells)-1])
	}
	return out
}
