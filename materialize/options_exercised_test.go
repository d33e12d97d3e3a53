package materialize_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/materialize"
)

// Tests of the options no other test exercises, each asserting its effect.

// WithLogger's logger hears of every snapshot saved, with its ID, size and
// completeness.
func TestWithLogger(t *testing.T) {
	j := newOutageJournal(t)
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	m := j.materializer(materialize.WithLogger(log), materialize.WithIDGenerator(func() string { return "snap-1" }))
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, at(4.5))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSnapshot(context.Background(), snap, "before outage"); err != nil {
		t.Fatal(err)
	}
	want := `"msg"="snapshot saved" "id"="snap-1" "name"="before outage" "cluster"="c1"`
	if len(lines) != 1 || !strings.Contains(lines[0], want) ||
		!strings.Contains(lines[0], fmt.Sprintf(`"objects"=%d "complete"=true`, len(snap.Objects))) {
		t.Errorf("the logger got %q, want one line with %s, %d objects, complete", lines, want, len(snap.Objects))
	}
}
