package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/why"
)

// TestWhy asks the query API why a Pod broke: the same answer as the
// library's, and clear errors for bad questions.
func TestWhy(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	if err := (&incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 2, Events: true}).Write(ctx, store); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.NewHandler(store))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pod := storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}
	q := why.Query{Object: pod, From: incident.T0, After: 10 * time.Minute, MaxObjects: 50}
	got, err := c.Why(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := why.New(store)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ex.Explain(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "why", got, want)
	if len(got.Candidates) == 0 || !strings.HasPrefix(got.Candidates[0].Summary, "configmaps shop/settings: data.color") || !got.Complete {
		t.Errorf("answer %+v", got)
	}

	for _, tc := range []struct {
		name   string
		q      why.Query
		status int
		code   string
		param  string
		says   string
	}{
		{"a secret", why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "secrets", Namespace: "shop", Name: "db"}}, http.StatusForbidden, server.CodeSecret, "resource", "Secrets are never served"},
		{"never recorded", why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "nope"}}, http.StatusNotFound, server.CodeNotFound, "", "the journal has no record of pods shop/nope"},
		{"before the journal", why.Query{Object: pod, At: incident.T0.Add(-time.Hour)}, http.StatusBadRequest, server.CodeInvalidParameter, "at", "before the journal began"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Why(ctx, tc.q)
			var e *server.Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Code != tc.code || e.Param != tc.param || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("error %v; want %d %s (param %q) saying %q", err, tc.status, tc.code, tc.param, tc.says)
			}
		})
	}
	resp, err := http.Get(srv.URL + "/api/v1/why?cluster=c1&resource=pods&namespace=shop&name=web-1-0&before=-5m")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("before=-5m: status %d; want 400", resp.StatusCode)
	}
}
