package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/materialize"
)

func TestSnapshot(t *testing.T) {
	r, before, after := clitest.Shop(t)

	var out bytes.Buffer
	if err := run(&out, r.Path, "shop", before.Format(time.RFC3339Nano), ""); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"complete: true", "ConfigMap shop/settings", "Pod shop/debug", "Deployment shop/web"} {
		if !strings.Contains(text, want) {
			t.Errorf("snapshot at the first mark lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "extra") {
		t.Errorf("snapshot at the first mark shows the later ConfigMap extra:\n%s", text)
	}

	out.Reset()
	if err := run(&out, r.Path, "shop", after.Format(time.RFC3339Nano), ""); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "ConfigMap shop/extra") || strings.Contains(text, "debug") {
		t.Errorf("snapshot at the end: want extra and no debug:\n%s", text)
	}

	// The recorder stopped at Close: "now" is after every stream's last
	// evidence, not yet observed, so the snapshot is not complete.
	out.Reset()
	if err := run(&out, r.Path, "shop", "now", ""); err != nil || !strings.Contains(out.String(), "complete: false") ||
		!strings.Contains(out.String(), "not yet observed: evidence reaches to") {
		t.Errorf("snapshot of now, after the recorder stopped: %v\n%s", err, out.String())
	}
	if err := run(&out, r.Path+".missing", "", "now", ""); err == nil {
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
	if err := run(&out, r.Path, "shop", before.Format(time.RFC3339Nano), ""); err != nil {
		t.Fatal(err)
	}
	if list, n := snapshots(t, r.Path); len(list) != 0 || n != records {
		t.Fatalf("a snapshot without --save wrote to the journal: %d snapshots, %d records (was %d)", len(list), n, records)
	}

	out.Reset()
	if err := run(&out, r.Path, "shop", before.Format(time.RFC3339Nano), "before-rollout"); err != nil {
		t.Fatal(err)
	}
	list, _ := snapshots(t, r.Path)
	if len(list) != 1 || list[0].Name != "before-rollout" || !list[0].At.Equal(before) || !list[0].Complete {
		t.Fatalf("saved snapshots %+v, want one named before-rollout at the first mark", list)
	}
	if !strings.Contains(out.String(), `saved as "before-rollout", ID `+list[0].ID) {
		t.Errorf("output does not name the saved snapshot:\n%s", out.String())
	}
}
