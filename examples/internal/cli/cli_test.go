package cli

import (
	"testing"
)

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
