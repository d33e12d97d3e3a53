package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/materialize"
)

func TestSnapshot(t *testing.T) {
	r, before, after := clitest.Shop(t)

	var out bytes.Buffer
	if err := run(&out, r.Path, "", []string{"shop"}, before.Format(time.RFC3339Nano), "", "table"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"complete: yes", "settings", "debug", "web"} {
		if !strings.Contains(text, want) {
			t.Errorf("table at the first mark lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "extra") {
		t.Errorf("table at the first mark shows the later ConfigMap extra:\n%s", text)
	}

	out.Reset()
	if err := run(&out, r.Path, "", []string{"shop"}, after.Format(time.RFC3339Nano), "", "json"); err != nil {
		t.Fatal(err)
	}
	var snap materialize.Snapshot
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	var names []string
	for _, o := range snap.Objects {
		names = append(names, o.Ref.Name)
	}
	if got := strings.Join(names, " "); got != "extra settings web" || !snap.Complete {
		t.Errorf("snapshot at the end: complete=%v objects %q, want complete with extra settings web", snap.Complete, got)
	}

	out.Reset()
	if err := run(&out, r.Path, "", []string{"shop"}, "now", "", "yaml"); err != nil || !strings.Contains(out.String(), "complete: true") {
		t.Errorf("-o yaml: %v\n%s", err, out.String())
	}
	if err := run(&out, r.Path, "", nil, "now", "", "xml"); err == nil {
		t.Error("-o xml was accepted")
	}
	if err := run(&out, r.Path+".missing", "", nil, "now", "", "table"); err == nil {
		t.Error("a missing journal was accepted")
	}
}

// snapshots returns the journal file's saved snapshots and record count.
func snapshots(t *testing.T, path string) ([]materialize.Snapshot, int64) {
	t.Helper()
	ctx := context.Background()
	store := clitest.Open(t, path)
	m, err := materialize.New(store)
	if err != nil {
		t.Fatal(err)
	}
	list, err := m.ListSnapshots(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return list, stats.Records
}

// The snapshot is saved only when --save asks for it.
func TestSnapshotSavesOnlyWhenAsked(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	_, records := snapshots(t, r.Path)

	var out bytes.Buffer
	if err := run(&out, r.Path, "", []string{"shop"}, before.Format(time.RFC3339Nano), "", "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "not saved") {
		t.Errorf("table does not say the snapshot is not saved:\n%s", out.String())
	}
	if list, n := snapshots(t, r.Path); len(list) != 0 || n != records {
		t.Fatalf("a snapshot without --save wrote to the journal: %d snapshots, %d records (was %d)", len(list), n, records)
	}

	out.Reset()
	if err := run(&out, r.Path, "", []string{"shop"}, before.Format(time.RFC3339Nano), "before-rollout", "table"); err != nil {
		t.Fatal(err)
	}
	list, _ := snapshots(t, r.Path)
	if len(list) != 1 || list[0].Name != "before-rollout" || !list[0].At.Equal(before) || !list[0].Complete {
		t.Fatalf("saved snapshots %+v, want one named before-rollout at the first mark", list)
	}
	if !strings.Contains(out.String(), `saved as "before-rollout", ID `+list[0].ID) {
		t.Errorf("table does not name the saved snapshot:\n%s", out.String())
	}
}
