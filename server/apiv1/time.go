package apiv1

import (
	"fmt"
	"strings"
	"time"
)

// ParseTime reads a time as the query API and krply's command-line tools
// take it: "now" (or empty), an RFC 3339 time with any precision
// ("2026-01-02T15:04:05Z", "2026-01-02T15:04:05.123+01:00"), or a duration
// before now, with or without " ago": "10m", "2h ago", "1h30m ago". A
// negative duration is refused: the future is not a question for a
// journal.
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "now" {
		return now, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	ago, hasAgo := strings.CutSuffix(s, " ago")
	ago = strings.TrimSpace(ago)
	if d, err := time.ParseDuration(ago); err == nil && ago != "" && ago[0] != '-' && ago[0] != '+' {
		return now.Add(-d), nil
	}
	if hasAgo {
		return time.Time{}, fmt.Errorf("time %q: want a duration before \" ago\", e.g. \"10m ago\" or \"1h30m ago\"", s)
	}
	return time.Time{}, fmt.Errorf("time %q: want \"now\", RFC 3339 (2026-01-02T15:04:05Z), a duration ago (\"10m\", \"2h ago\")", s)
}
