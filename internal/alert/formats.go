package alert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// formats builds a POST body per PGINBOX_ALERT_FORMAT.
var formats = map[string]func(Alert, Config) ([]byte, error){
	"pginbox":      pginboxBody,
	"slack":        slackBody,
	"pagerduty":    pagerdutyBody,
	"alertmanager": alertmanagerBody,
}

// Formats returns the body forms a Sender can POST: pginbox (the default),
// slack (an incoming webhook), pagerduty (Events v2) and alertmanager
// (POST /api/v2/alerts).
func Formats() []string {
	out := make([]string, 0, len(formats))
	for f := range formats {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// pginboxBody is pginbox's own alert:
// {"check","family","status","value","min_ok","max_ok","description","remedy","at"}.
func pginboxBody(a Alert, _ Config) ([]byte, error) {
	return json.Marshal(struct {
		Check       string    `json:"check"`
		Family      string    `json:"family"`
		Status      string    `json:"status"`
		Value       *float64  `json:"value"`
		MinOK       *float64  `json:"min_ok"`
		MaxOK       *float64  `json:"max_ok"`
		Description string    `json:"description"`
		Remedy      string    `json:"remedy"`
		At          time.Time `json:"at"`
	}{a.Check, a.Family, a.Status, a.Value, a.MinOK, a.MaxOK, a.Description, a.Remedy, a.At.UTC()})
}

// summary is one line about a: "pginbox check dead_events_24h (errors)
// breached: 3 outside [0, 0]".
func summary(a Alert) string {
	verb := "breached"
	if a.Status == "resolved" {
		verb = "cleared"
	}
	return fmt.Sprintf("pginbox check %s (%s) %s: %s, range [%s, %s]", a.Check, a.Family, verb, num(a.Value, "no value"),
		num(a.MinOK, "-inf"), num(a.MaxOK, "+inf"))
}

func num(v *float64, none string) string {
	if v == nil {
		return none
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// slackBody is a Slack incoming-webhook message: {"text": ...} in mrkdwn.
func slackBody(a Alert, _ Config) ([]byte, error) {
	icon := ":rotating_light: *FIRING*"
	if a.Status == "resolved" {
		icon = ":white_check_mark: *RESOLVED*"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", icon, summary(a))
	if a.Description != "" {
		fmt.Fprintf(&b, "%s\n", a.Description)
	}
	if a.Remedy != "" && a.Status == "firing" {
		fmt.Fprintf(&b, "What to do: %s\n", a.Remedy)
	}
	fmt.Fprintf(&b, "at %s", a.At.UTC().Format(time.RFC3339))
	return json.Marshal(map[string]string{"text": b.String()})
}

// pagerdutyBody is a PagerDuty Events API v2 event: trigger on firing,
// resolve on resolved, one incident per check (dedup_key pginbox/<check>).
func pagerdutyBody(a Alert, cfg Config) ([]byte, error) {
	ev := map[string]any{
		"routing_key": cfg.RoutingKey,
		"dedup_key":   "pginbox/" + a.Check,
	}
	if a.Status == "resolved" {
		ev["event_action"] = "resolve"
		return json.Marshal(ev)
	}
	ev["event_action"] = "trigger"
	ev["payload"] = map[string]any{
		"summary":   summary(a),
		"source":    "pginbox",
		"severity":  "error",
		"timestamp": a.At.UTC().Format(time.RFC3339),
		"component": a.Check,
		"group":     a.Family,
		"custom_details": map[string]any{
			"value": a.Value, "min_ok": a.MinOK, "max_ok": a.MaxOK,
			"description": a.Description, "remedy": a.Remedy,
		},
	}
	return json.Marshal(ev)
}

// alertmanagerBody is one alert for Alertmanager's POST /api/v2/alerts. A
// firing alert carries an endsAt a year ahead, since it is sent once (not
// re-sent the way Prometheus does) and must not expire by Alertmanager's
// resolve_timeout; the resolved POST ends it at the run that saw it clear.
func alertmanagerBody(a Alert, _ Config) ([]byte, error) {
	al := map[string]any{
		"labels": map[string]string{
			"alertname": "PginboxCheckBreached", "check": a.Check, "family": a.Family,
			"severity": "warning", "service": "pginbox",
		},
		"annotations": map[string]string{
			"summary": summary(a), "description": a.Description, "remedy": a.Remedy,
		},
	}
	if a.Status == "resolved" {
		start := a.Since
		if start.IsZero() || !start.Before(a.At) {
			start = a.At.Add(-time.Second)
		}
		al["startsAt"], al["endsAt"] = start.UTC().Format(time.RFC3339Nano), a.At.UTC().Format(time.RFC3339Nano)
	} else {
		al["startsAt"], al["endsAt"] = a.At.UTC().Format(time.RFC3339Nano), a.At.AddDate(1, 0, 0).UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal([]any{al})
}
