package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/readonly"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// t0 is the start of the recorded journal of these tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(minutes float64) time.Time { return t0.Add(time.Duration(minutes * float64(time.Minute))) }

// now is the clock of the handlers under test: after everything recorded.
var now = at(30)

// Streams of the recorded journal: ConfigMaps of two namespaces, their
// Secrets, Namespaces (cluster-scoped) and Deployments of every namespace
// (one stream for all of them).
var (
	cmShop   = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	cmOther  = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "other"}
	secShop  = event.Stream{ClusterID: "c1", Version: "v1", Resource: "secrets", Namespace: "shop"}
	nsStream = event.Stream{ClusterID: "c1", Version: "v1", Resource: "namespaces"}
	deploys  = event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments"}
)

// recorded is a journal as a recorder leaves it, written through a
// writable SQLite store (w) and served from a read-only open of the same
// file (ro), as a query process reads a recorder's journal.
type recorded struct {
	t     *testing.T
	w, ro storage.Store
	rv    int
	// settings is the last record of shop/settings, changes its three
	// changes.
	settings event.Record
	changes  []event.Record
}

func (j *recorded) nextRV() string { j.rv++; return strconv.Itoa(j.rv) }

func (j *recorded) append(recs ...event.Record) []event.Record {
	j.t.Helper()
	if _, err := j.w.Append(context.Background(), recs); err != nil {
		j.t.Fatal(err)
	}
	return recs
}

func cmItem(s event.Stream, ns, name, rv string, data map[string]string) storagetest.Item {
	return storagetest.Item{Ref: storagetest.Ref(s, "ConfigMap", ns, name, "uid-"+ns+"-"+name, rv),
		Object: storagetest.ConfigMap(ns, name, "uid-"+ns+"-"+name, rv, data)}
}

func secretBody(ns, name, rv, password string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"namespace":%q,"uid":"uid-secret","resourceVersion":%q},"data":{"password":%q}}`, name, ns, rv, password)
}

func nsBody(name, rv string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q,"uid":"uid-ns-%s","resourceVersion":%q}}`, name, name, rv)
}

func deployBody(ns, name, rv string, replicas int) []byte {
	return storagetest.Deployment(ns, name, "uid-deploy-"+name, rv, replicas, "nginx:1.27")
}

// newRecorded writes the journal: baselines at 0, changes from 1 to 8, a
// gap in other's ConfigMaps from 4 to 6 (relisted at 6), progress up to 20.
func newRecorded(t *testing.T) *recorded {
	t.Helper()
	w, ro := readonly.Journal(t)
	j := &recorded{t: t, w: w, ro: ro, rv: 100}
	shopItems := []storagetest.Item{cmItem(cmShop, "shop", "settings", j.nextRV(), map[string]string{"color": "blue"})}
	j.append(storagetest.Baseline(cmShop, "b-shop", at(0), j.nextRV(), shopItems)...)
	j.append(storagetest.Baseline(cmOther, "b-other", at(0), j.nextRV(), []storagetest.Item{cmItem(cmOther, "other", "flags", j.nextRV(), map[string]string{"beta": "off"})})...)
	secRV := j.nextRV()
	j.append(storagetest.Baseline(secShop, "b-sec", at(0), j.nextRV(), []storagetest.Item{{Ref: storagetest.Ref(secShop, "Secret", "shop", "db", "uid-secret", secRV), Object: secretBody("shop", "db", secRV, "b2xk")}})...)
	nsRV := j.nextRV()
	j.append(storagetest.Baseline(nsStream, "b-ns", at(0), j.nextRV(), []storagetest.Item{{Ref: storagetest.Ref(nsStream, "Namespace", "", "shop", "uid-ns-shop", nsRV), Object: nsBody("shop", nsRV)}})...)
	dRV := j.nextRV()
	j.append(storagetest.Baseline(deploys, "b-deploy", at(0), j.nextRV(), []storagetest.Item{{Ref: storagetest.Ref(deploys, "Deployment", "shop", "web", "uid-deploy-web", dRV), Object: deployBody("shop", "web", dRV, 2)}})...)

	for i, color := range []string{"green", "red", "yellow"} {
		rv := j.nextRV()
		ref := storagetest.Ref(cmShop, "ConfigMap", "shop", "settings", "uid-shop-settings", rv)
		rec := storagetest.Event(cmShop, event.Modified, ref, storagetest.ConfigMap("shop", "settings", "uid-shop-settings", rv, map[string]string{"color": color}), at(float64(1+2*i)))
		j.append(rec)
		j.settings = rec
		j.changes = append(j.changes, rec)
	}
	j.append(storagetest.Correlation(j.settings, "audit-1", "alice", at(5.1)))
	rv := j.nextRV()
	j.append(storagetest.Event(deploys, event.Modified, storagetest.Ref(deploys, "Deployment", "shop", "web", "uid-deploy-web", rv), deployBody("shop", "web", rv, 3), at(2)))
	rv = j.nextRV()
	j.append(storagetest.Event(deploys, event.Added, storagetest.Ref(deploys, "Deployment", "other", "api", "uid-deploy-api", rv), deployBody("other", "api", rv, 1), at(2.5)))
	rv = j.nextRV()
	j.append(storagetest.Event(secShop, event.Modified, storagetest.Ref(secShop, "Secret", "shop", "db", "uid-secret", rv), secretBody("shop", "db", rv, "bmV3"), at(3)))
	j.append(storagetest.Gap(cmOther, at(4), at(6), "410 Gone: too old resource version", "104"))
	j.append(storagetest.Baseline(cmOther, "b-other-2", at(6), j.nextRV(), []storagetest.Item{cmItem(cmOther, "other", "flags", j.nextRV(), map[string]string{"beta": "on"})})...)
	for _, s := range []event.Stream{cmShop, cmOther, secShop, nsStream, deploys} {
		j.append(storagetest.Checkpoint(s, j.nextRV(), true, at(20)))
	}
	return j
}

// serve starts a handler over the read-only journal with the test clock
// and returns a client of it.
func (j *recorded) serve(opts ...server.Option) (*client.Client, string) {
	j.t.Helper()
	opts = append([]server.Option{server.WithClock(clocktesting.NewFakePassiveClock(now))}, opts...)
	srv := httptest.NewServer(server.NewHandler(j.ro, opts...))
	j.t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		j.t.Fatal(err)
	}
	return c, srv.URL
}

// materializer answers the same questions from the library, for the
// comparisons.
func (j *recorded) materializer() *materialize.Materializer {
	j.t.Helper()
	m, err := materialize.New(j.ro, materialize.WithClock(clocktesting.NewFakePassiveClock(now)))
	if err != nil {
		j.t.Fatal(err)
	}
	return m
}

// sameJSON fails t unless got and want marshal to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	wiretest.SameJSON(t, what, got, want)
}
