package cli

import (
	"testing"
	"time"
)

// ParseTime is the query API's parser (server.ParseTime, tested there).
func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	if got, err := ParseTime("1h30m ago", now); err != nil || !got.Equal(now.Add(-90*time.Minute)) {
		t.Errorf("ParseTime(1h30m ago) = %v, %v", got, err)
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime(yesterday) = nil error")
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
