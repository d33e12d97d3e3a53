package main

import (
	"time"

	"github.com/krply/krply/server"
)

// parseTime reads the value of --flag with server.ParseTime, the one
// parser of the query API and every krply tool: "now", RFC 3339 at any
// precision, or a duration ago ("10m", "10m ago", "1h30m ago").
func parseTime(flag, s string, now time.Time) (time.Time, error) {
	t, err := server.ParseTime(s, now)
	if err != nil {
		return time.Time{}, usagef("--%s: %v", flag, err)
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
