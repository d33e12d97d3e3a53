package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/memory"
)

// A CEL condition over object, given to Find: when did web run with fewer
// than two replicas? The journal has a baseline at 10:00 (two replicas),
// a scale-down at 10:20 by bob, a gap from 10:40 and a relist at 11:00
// that shows one replica still.
func ExampleCompile() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	s := event.Stream{ClusterID: "prod", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	t0 := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	version := func(rv string, replicas int, minute int, baselineID string) event.Record {
		ref := event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: rv}
		body := []byte(fmt.Sprintf(`{"kind":"Deployment","metadata":{"name":"web","resourceVersion":%q},"spec":{"replicas":%d}}`, rv, replicas))
		wt := event.Modified
		if baselineID != "" {
			wt = event.Added
		}
		return event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, wt, baselineID), ClusterID: "prod",
			StreamID: s.ID(), ObservedAt: t0.Add(time.Duration(minute) * time.Minute), WatchType: wt, Synthetic: baselineID != "",
			BaselineID: baselineID, Resource: ref, Object: body}
	}
	baseline := func(id, rv string, minute int, phase event.BaselinePhase) event.Record {
		return event.Record{Type: event.TypeBaseline, EventID: id + string(phase), ClusterID: "prod", StreamID: s.ID(),
			ObservedAt: t0.Add(time.Duration(minute) * time.Minute), BaselineID: id, Baseline: &event.Baseline{ID: id, Phase: phase, ResourceVersion: rv}}
	}
	scaled := version("110", 1, 20, "")
	_, err := store.Append(ctx, []event.Record{
		baseline("b1", "100", 0, event.BaselineBegin), version("100", 2, 0, "b1"), baseline("b1", "100", 0, event.BaselineEnd),
		scaled,
		{Type: event.TypeGap, EventID: "gap", ClusterID: "prod", StreamID: s.ID(), ObservedAt: t0.Add(50 * time.Minute),
			Gap: &event.Gap{From: t0.Add(40 * time.Minute), To: t0.Add(50 * time.Minute), Reason: "410 Gone"}},
		baseline("b2", "150", 60, event.BaselineBegin), version("150", 1, 60, "b2"), baseline("b2", "150", 60, event.BaselineEnd),
		{Type: event.TypeAuditCorrelation, EventID: "audit-1", ClusterID: "prod", ObservedAt: t0.Add(20 * time.Minute),
			Audit: &event.AuditCorrelation{TargetEventID: scaled.EventID, User: "bob", Verb: "patch", Confidence: 1}},
	})
	if err != nil {
		panic(err)
	}

	expr, err := cel.Compile(`object.spec.replicas < 2`)
	if err != nil {
		panic(err)
	}
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	found, err := m.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: "prod"}}, expr.Predicate())
	if err != nil {
		panic(err)
	}
	for _, iv := range found.Objects[0].Intervals {
		fmt.Printf("from %s", iv.From.Format("15:04"))
		if p := iv.Opened.Provenance; len(p) > 0 {
			fmt.Printf(" (by %s)", p[0].User)
		}
		if iv.StartUnknown != "" {
			fmt.Printf(" (maybe earlier: %s)", iv.StartUnknown)
		}
		switch {
		case iv.Open():
			fmt.Println(", still true")
		case iv.EndUnknown != "":
			fmt.Printf(" to %s (maybe later: %s)\n", iv.To.Format("15:04"), iv.EndUnknown)
		}
	}

	_, err = cel.Compile(`size(obj.spec.template.spec.containers) > 1`)
	var ce *cel.CompileError
	if errors.As(err, &ce) {
		fmt.Printf("column %d: %s\nhint: %s\n", ce.Column, ce.Reason, ce.Hint)
	}
	// Output:
	// from 10:20 (by bob) to 10:40 (maybe later: gap from 2025-03-01T10:40:00Z: 410 Gone)
	// from 11:00 (maybe earlier: gap from 2025-03-01T10:40:00Z: 410 Gone), still true
	// column 6: undeclared reference to 'obj'
	// hint: the variables are object; fields are read with a dot, e.g. object.spec.replicas < 2
}

// A recording rule decides which objects a Collector records
// (watch.WithRecordRule); here, those without the label scratch.
func ExampleCompileRule() {
	rule, err := cel.CompileRule(`!has(object.metadata.labels) || !("scratch" in object.metadata.labels)`)
	if err != nil {
		panic(err)
	}
	for _, body := range []string{
		`{"metadata":{"name":"app","labels":{"tier":"web"}}}`,
		`{"metadata":{"name":"tmp","labels":{"scratch":"yes"}}}`,
	} {
		ok, err := rule.Match(context.Background(), json.RawMessage(body))
		fmt.Println(ok, err)
	}
	// Output:
	// true <nil>
	// false <nil>
}
