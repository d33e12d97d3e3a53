package cli

import (
	"testing"
	"time"
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
		{in: "10m ago", want: now.Add(-10 * time.Minute)},
		{in: "1h30m ago", want: now.Add(-90 * time.Minute)},
		{in: "2026-01-02T10:00:00Z", want: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)},
		{in: "2026-01-02T10:00:00.5+01:00", want: time.Date(2026, 1, 2, 9, 0, 0, 5e8, time.UTC)},
		{in: "10 minutes ago", bad: true},
		{in: "-5m ago", bad: true},
		{in: "yesterday", bad: true},
	}
	for _, tc := range cases {
		got, err := ParseTime(tc.in, now)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseTime(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestStringsFlag(t *testing.T) {
	var s Strings
	for _, v := range []string{"deploy,cm", " svc ", ""} {
		if err := s.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.String(); got != "deploy,cm,svc" {
		t.Errorf("Strings = %q, want deploy,cm,svc", got)
	}
}
