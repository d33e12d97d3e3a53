package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

// A journal served by NewHandler, asked through the Go client: a
// ConfigMap listed at 10:00 and changed at 10:30, with a bookmark at 11:00
// that vouches for the time before it.
func ExampleNewHandler() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	s := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	ref := func(rv string) event.ResourceRef {
		return storagetest.Ref(s, "ConfigMap", "shop", "settings", "u1", rv)
	}
	recs := storagetest.Baseline(s, "b1", t0, "100", []storagetest.Item{{Ref: ref("100"),
		Object: storagetest.ConfigMap("shop", "settings", "u1", "100", map[string]string{"color": "blue"})}})
	recs = append(recs,
		storagetest.Event(s, event.Modified, ref("120"), storagetest.ConfigMap("shop", "settings", "u1", "120", map[string]string{"color": "green"}), t0.Add(30*time.Minute)),
		storagetest.Checkpoint(s, "130", true, t0.Add(time.Hour)))
	if _, err := store.Append(ctx, recs); err != nil {
		panic(err)
	}

	srv := httptest.NewServer(server.NewHandler(store))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		panic(err)
	}
	settings := storage.ObjectID{ClusterID: "prod", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	for _, at := range []time.Time{t0.Add(15 * time.Minute), t0.Add(45 * time.Minute), t0.Add(2 * time.Hour)} {
		st, err := c.ObjectAt(ctx, settings, at)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: resourceVersion %s, covered %v\n", at.Format("15:04"), st.Record.Resource.ResourceVersion, st.Covered)
	}
	// Output:
	// 10:15: resourceVersion 100, covered true
	// 10:45: resourceVersion 120, covered true
	// 12:00: resourceVersion 120, covered false
}
