package krply_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
)

// A Journal and the query API's client answer every question of
// krply.Querier alike: the same answers to the same calls and options, and
// errors that are the same sentinels, over HTTP too.
func TestQuerierAlike(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm", "ns"), krplytest.WithObjects(ns, configMapObject("shop", "settings", "blue")))
	from := c.Mark()
	for _, color := range []string{"green", "red", "white"} {
		c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, color, "data", "color")
			_ = unstructured.SetNestedField(u.Object, color, "status", "seen")
		})
	}
	c.Create(configMapObject("shop", "extra", "red"))
	to := c.Mark()
	c.Stop()

	ctx := context.Background()
	j, err := krply.NewJournal(c.Store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.NewHandler(c.Store))
	defer srv.Close()
	cl, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	settings := krply.Object(c.ClusterID, "configmaps", "shop", "settings")
	shop := krply.Namespaces(c.ClusterID, "shop")
	questions := []struct {
		name string
		ask  func(q krply.Querier) (any, error)
	}{
		{"ObjectAt", func(q krply.Querier) (any, error) { return q.ObjectAt(ctx, settings, from) }},
		{"History", func(q krply.Querier) (any, error) { return q.History(ctx, settings) }},
		{"History without status", func(q krply.Querier) (any, error) {
			return q.History(ctx, settings, materialize.IncludeStatus(false), materialize.Since(from))
		}},
		{"History in pages", func(q krply.Querier) (any, error) {
			var entries []materialize.Entry
			after := ""
			for pages := 0; pages == 0 || after != ""; pages++ {
				h, err := q.History(ctx, settings, materialize.Limit(2), materialize.After(after))
				if err != nil || pages > 10 {
					return nil, errors.Join(err, errors.New("paging does not end"))
				}
				entries, after = append(entries, h.Entries...), h.Next
			}
			return entries, nil
		}},
		{"Snapshot", func(q krply.Querier) (any, error) {
			snap, err := q.Snapshot(ctx, shop, to)
			if err == nil {
				snap.CreatedAt = to // when it was computed
			}
			return snap, err
		}},
		{"Diff", func(q krply.Querier) (any, error) { return q.Diff(ctx, shop, from, to) }},
		{"Diff with status", func(q krply.Querier) (any, error) {
			return q.Diff(ctx, shop, from, to, materialize.IncludeStatus(true))
		}},
		{"ListSnapshots", func(q krply.Querier) (any, error) { return q.ListSnapshots(ctx, c.ClusterID) }},
	}
	for _, question := range questions {
		fromJournal, err := question.ask(j)
		if err != nil {
			t.Fatalf("%s of the journal: %v", question.name, err)
		}
		fromClient, err := question.ask(cl)
		if err != nil {
			t.Fatalf("%s of the client: %v", question.name, err)
		}
		a, _ := json.Marshal(fromJournal)
		b, _ := json.Marshal(fromClient)
		if string(a) != string(b) {
			t.Errorf("%s:\njournal %s\nclient  %s", question.name, a, b)
		}
	}

	// The same sentinels: a journal's error and the server's answer.
	for name, q := range map[string]krply.Querier{"journal": j, "client": cl} {
		if _, err := q.GetSnapshot(ctx, "no-such-snapshot"); !errors.Is(err, krply.ErrNotFound) {
			t.Errorf("%s: GetSnapshot of no snapshot = %v, want krply.ErrNotFound", name, err)
		}
		if _, err := q.History(ctx, settings, materialize.Since(to), materialize.Until(from)); !errors.Is(err, krply.ErrInvalidArgument) {
			t.Errorf("%s: History until before since = %v, want krply.ErrInvalidArgument", name, err)
		}
	}
	if _, err := cl.History(ctx, settings, materialize.Limit(server.DefaultMaxPageSize+1)); !errors.Is(err, krply.ErrInvalidArgument) {
		t.Errorf("a page over the server's maximum = %v, want krply.ErrInvalidArgument (invalid_parameter)", err)
	}
	// What the query API does not carry is refused, naming the option.
	if _, err := cl.History(ctx, settings, materialize.FromStream("x"), materialize.WithoutDefaultIgnores()); !errors.Is(err, krply.ErrInvalidArgument) ||
		err.Error() != "client: invalid argument: FromStream, WithoutDefaultIgnores of History: the query API does not take it; ask the journal itself (krply.Open) for it" {
		t.Errorf("History with FromStream through the client = %v", err)
	}
}
