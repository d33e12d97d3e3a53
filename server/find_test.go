package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
)

// containsConditions compiles "contains:TEXT" into the condition "the
// body contains TEXT": a stand-in for CEL, which lives in its own module.
type containsConditions struct{}

func (containsConditions) Compile(expr string) (materialize.Predicate, error) {
	text, ok := strings.CutPrefix(expr, "contains:")
	if !ok {
		return nil, fmt.Errorf("test: %w: line 1, column 1: want contains:TEXT (hint: start with contains:)", materialize.ErrInvalidArgument)
	}
	return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return strings.Contains(string(object), text), nil
	}), nil
}

// TestFind: GET /api/v1/find answers what the library's Find answers,
// through the client, without Secrets (a condition would read their data).
func TestFind(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithConditions(containsConditions{}))
	q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1"}}
	got, err := c.Find(ctx, q, `contains:"color":"red"`)
	if err != nil {
		t.Fatal(err)
	}
	// settings was red from 3 to 5 (rv of the changes at 3 and 5).
	if len(got.Objects) != 1 || got.Objects[0].Object.Name != "settings" || len(got.Objects[0].Intervals) != 1 ||
		!got.Objects[0].Intervals[0].From.Equal(at(3)) || !got.Objects[0].Intervals[0].To.Equal(at(5)) ||
		got.Objects[0].Intervals[0].Closed.Provenance[0].User != "alice" {
		t.Errorf("find red: %+v", got.Objects)
	}
	q.ExcludeResources = got.Query.ExcludeResources
	want, err := j.materializer().Find(ctx, q, materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return strings.Contains(string(object), `"color":"red"`), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "find red", got, want)

	// The Secret db has "password" in its data: not searched.
	secret, err := c.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, First: true}, `contains:"password":"b2xk"`)
	if err != nil || len(secret.Objects) != 0 {
		t.Errorf("find in the Secrets: %+v, %v; want nothing", secret, err)
	}
	for _, s := range secret.Streams {
		if strings.Contains(s.StreamID, "secrets") {
			t.Errorf("find looked at the Secrets' stream %s", s.StreamID)
		}
	}
	wantError(t, http.MethodGet, base+"/api/v1/find?resource=secrets&expr=contains:x", "", http.StatusForbidden, server.CodeSecret, "resource")
	wantError(t, http.MethodGet, base+"/api/v1/find", "", http.StatusBadRequest, server.CodeInvalidParameter, "expr")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=object.spec", "", http.StatusBadRequest, server.CodeInvalidParameter, "expr")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=contains:x&first=maybe", "", http.StatusBadRequest, server.CodeInvalidParameter, "first")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=contains:x&labelSelector=a+in+(b", "", http.StatusBadRequest, server.CodeInvalidParameter, "")

	_, plain := j.serve()
	wantError(t, http.MethodGet, plain+"/api/v1/find?expr=contains:x", "", http.StatusNotImplemented, server.CodeNotImplemented, "expr")
}

// changeConditions adds change filters to containsConditions: "type:T"
// keeps the versions of watch type T.
type changeConditions struct{ containsConditions }

func (changeConditions) CompileChange(expr string) (materialize.ChangeFilter, error) {
	typ, ok := strings.CutPrefix(expr, "type:")
	if !ok {
		return nil, fmt.Errorf("test: %w: want type:T", materialize.ErrInvalidArgument)
	}
	return materialize.ChangeFilterFunc(func(_ context.Context, c materialize.Change) (bool, error) {
		return string(c.Version.WatchType) == typ, nil
	}), nil
}

// sentFilter is a change filter the Go client sends as its expression;
// the server compiles it with its Conditions.
type sentFilter string

func (f sentFilter) MatchChange(context.Context, materialize.Change) (bool, error) {
	return false, errors.New("test: evaluated by the server, not the client")
}

func (f sentFilter) Expression() string { return string(f) }

// TestHistoryFilter: GET /api/v1/history?filter= keeps the versions the
// change filter matches, when the handler's Conditions compile them.
func TestHistoryFilter(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithConditions(changeConditions{}))
	obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	h, err := c.History(ctx, obj, materialize.WithChangeFilter(sentFilter("type:MODIFIED")))
	if err != nil {
		t.Fatal(err)
	}
	// A filter that cannot say its expression cannot be sent.
	local := materialize.ChangeFilterFunc(func(context.Context, materialize.Change) (bool, error) { return true, nil })
	if _, err := c.History(ctx, obj, materialize.WithChangeFilter(local)); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithChangeFilter") {
		t.Errorf("History with a filter without its expression: %v, want ErrInvalidArgument naming WithChangeFilter", err)
	}
	if v := h.Versions(); len(v) != 3 || v[0].ResourceVersion != j.changes[0].Resource.ResourceVersion {
		t.Errorf("history of settings, MODIFIED only: %d versions; want its three changes", len(v))
	}
	wantError(t, http.MethodGet, base+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&filter=bogus", "", http.StatusBadRequest, server.CodeInvalidParameter, "filter")
	_, plain := j.serve(server.WithConditions(containsConditions{}))
	wantError(t, http.MethodGet, plain+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&filter=type:ADDED", "", http.StatusNotImplemented, server.CodeNotImplemented, "filter")
}
