package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/server"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "now", want: now},
		{in: "", want: now},
		{in: "  now ", want: now},
		{in: "10m", want: now.Add(-10 * time.Minute)},
		{in: "10m ago", want: now.Add(-10 * time.Minute)},
		{in: "2h ago", want: now.Add(-2 * time.Hour)},
		{in: "1h30m ago", want: now.Add(-90 * time.Minute)},
		{in: "90s", want: now.Add(-90 * time.Second)},
		{in: "0s", want: now},
		{in: "2026-01-02T10:00:00Z", want: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)},
		{in: "2026-01-02T10:00:00.5+01:00", want: time.Date(2026, 1, 2, 9, 0, 0, 5e8, time.UTC)},
		{in: "2026-01-02T10:00:00.123456789Z", want: time.Date(2026, 1, 2, 10, 0, 0, 123456789, time.UTC)},
		{in: "10 minutes ago", bad: true},
		{in: "-5m ago", bad: true},
		{in: "-5m", bad: true},
		{in: "+5m", bad: true},
		{in: " ago", bad: true},
		{in: "ago", bad: true},
		{in: "yesterday", bad: true},
		{in: "2026-01-02", bad: true},
		{in: "10d", bad: true},
	}
	for _, tc := range cases {
		got, err := server.ParseTime(tc.in, now)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseTime(%q) = %v, want an error", tc.in, got)
			} else if !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseTime(%q): error %q does not name the input", tc.in, err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseTime: ParseTime never panics, never answers a time after now
// for a relative input, and reads back what it formats.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"now", "", "10m", "2h ago", "1h30m ago", "2026-01-02T10:00:00.5+01:00", "-5m", "9999999999h", "1.5h ago", " ago"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := server.ParseTime(s, now)
		if err != nil {
			if !got.IsZero() {
				t.Fatalf("ParseTime(%q) = %v with error %v; want the zero time", s, got, err)
			}
			return
		}
		if _, rfcErr := time.Parse(time.RFC3339Nano, strings.TrimSpace(s)); rfcErr != nil && got.After(now) {
			t.Fatalf("ParseTime(%q) = %v: a relative time after now", s, got)
		}
		again, err := server.ParseTime(got.Format(time.RFC3339Nano), now)
		if err != nil || !again.Equal(got) {
			t.Fatalf("ParseTime(%q) = %v, which reads back as %v, %v", s, got, again, err)
		}
	})
}
