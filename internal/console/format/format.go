// Package format writes the console's figures as text: times as "3m05s
// ago", durations at a precision that suits their size, counts as 12.3k,
// a check's accepted range, a remedy's `backticks` as <code>. The pages'
// templates call it; it reads no request and no database.
package format

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Ago formats a time (or *time.Time) as "3m05s ago" or "in 2s".
func Ago(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return "–"
		}
		t = *x
	default:
		return ""
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + Duration(-d)
	}
	return Duration(d) + " ago"
}

// Float reads the numbers templates format (nil pointers are absent).
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case *float64:
		if x == nil {
			return 0, false
		}
		return *x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}

// Clip cuts s to n runes, marking a cut with an ellipsis.
func Clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Code renders `backticks` of the checks' remedies (webhooks.checks.remedy) as <code>.
func Code(s string) template.HTML {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 {
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
		} else {
			b.WriteString(template.HTMLEscapeString(p))
		}
	}
	return template.HTML(b.String())
}

// Num formats a number compactly (12.3k, 1.2M).
func Num(f float64) string {
	switch {
	case math.IsNaN(f):
		return "–"
	case math.Abs(f) >= 1e6:
		return strconv.FormatFloat(f/1e6, 'f', 1, 64) + "M"
	case math.Abs(f) >= 1e4:
		return strconv.FormatFloat(f/1e3, 'f', 1, 64) + "k"
	case f == math.Trunc(f):
		return strconv.FormatFloat(f, 'f', 0, 64)
	default:
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
}

// Range formats a check's accepted range.
func Range(lo, hi *float64) string {
	switch {
	case lo == nil && hi == nil:
		return "any"
	case lo == nil:
		return "≤ " + Num(*hi)
	case hi == nil:
		return "≥ " + Num(*lo)
	default:
		return Num(*lo) + " – " + Num(*hi)
	}
}

// Duration formats a duration at a precision that suits its size.
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}
