package materialize_test

import (
	"context"
	"sync"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// One Materializer serves concurrent callers while the journal grows.
func TestConcurrentUse(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				st, err := m.ObjectAt(ctx, idOf(j.cms, "a", "shop"), at(2))
				if err != nil {
					errs <- err
					return
				}
				if !st.Exists || dataOfString(st.Object) != "2" {
					t.Errorf("ObjectAt a at 2: exists=%v body %s", st.Exists, st.Object)
					return
				}
				snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(4.5))
				if err != nil {
					errs <- err
					return
				}
				if err := m.SaveSnapshot(ctx, snap, "concurrent"); err != nil {
					errs <- err
					return
				}
				if _, err := m.Diff(ctx, materialize.Scope{ClusterID: "c1"}, at(1), at(10)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// The journal grows meanwhile.
	for i := 0; i < 20; i++ {
		j.watch(j.cms, event.Added, cm("shop", "new-"+string(rune('a'+i)), "un", map[string]any{"v": "1"}), at(20+float64(i)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := m.ListSnapshots(ctx, "c1")
	if err != nil || len(list) != 80 {
		t.Fatalf("%d snapshots, %v; want 80", len(list), err)
	}
}
