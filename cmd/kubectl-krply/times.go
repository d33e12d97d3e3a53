package main

import (
	"strings"
	"time"
)

// parseTime reads "now", an RFC 3339 time, or a duration ago: "10m ago",
// "90s ago", "1h30m ago". flag names the flag in errors.
func parseTime(flag, s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "now" {
		return now, nil
	}
	if ago, ok := strings.CutSuffix(s, " ago"); ok {
		d, err := time.ParseDuration(strings.TrimSpace(ago))
		if err != nil || d < 0 {
			return time.Time{}, usagef("--%s %q: want a duration before \" ago\", e.g. \"10m ago\"", flag, s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("--%s %q: want \"now\", RFC 3339 (2026-01-02T15:04:05.5Z) or \"10m ago\"", flag, s)
	}
	return t, nil
}

// since prints how long ago t was, to the tenth of a second.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(100 * time.Millisecond).String()
}
