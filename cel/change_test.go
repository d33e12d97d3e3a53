package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

func TestChangeFilter(t *testing.T) {
	before := json.RawMessage(`{"metadata":{"name":"web"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"image":"x:1.1"}]}}}}`)
	after := json.RawMessage(`{"metadata":{"name":"web"},"spec":{"replicas":3,"template":{"spec":{"containers":[{"image":"x:1.2"}]}}}}`)
	scaled := materialize.Change{Old: before, New: after, Version: &materialize.Version{WatchType: event.Modified, Origin: materialize.OriginWatch,
		ResourceVersion: "42", ObservedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Changes:       []materialize.FieldChange{{Path: "spec.replicas"}, {Path: "spec.template.spec.containers[0].image"}},
		FieldManagers: []materialize.FieldManager{{Manager: "kubectl-edit"}},
		Provenance:    []event.AuditCorrelation{{User: "bob", Groups: []string{"dev"}, UserAgent: "kubectl/v1.37"}}}}
	deleted := materialize.Change{Old: after, Version: &materialize.Version{WatchType: event.Deleted, Origin: materialize.OriginInferred}}
	for _, tc := range []struct {
		expr           string
		scaled, delete bool
	}{
		{`change.paths.exists(p, p.startsWith("spec.template"))`, true, false},
		{`actor.user == "bob" && "dev" in actor.groups && actor.userAgent.startsWith("kubectl")`, true, false},
		{`"kubectl-edit" in actor.managers`, true, false},
		{`new.spec.replicas > old.spec.replicas`, true, false},
		{`change.type == "DELETED" && new == null && old.metadata.name == "web"`, false, true},
		{`change.origin == "watch" && change.resourceVersion == "42" && change.observedAt > timestamp("2026-01-01T00:00:00Z")`, true, false},
	} {
		e, err := cel.CompileChange(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		f := e.Filter()
		for _, c := range []struct {
			change materialize.Change
			want   bool
		}{{scaled, tc.scaled}, {deleted, tc.delete}} {
			got, err := f.MatchChange(context.Background(), c.change)
			if err != nil && !errors.Is(err, materialize.ErrEvaluation) {
				t.Errorf("%s on %s: %v", tc.expr, c.change.Version.WatchType, err)
			}
			if got != c.want {
				t.Errorf("%s on %s: %v, want %v (%v)", tc.expr, c.change.Version.WatchType, got, c.want, err)
			}
		}
	}
	_, err := cel.CompileChange(`object.spec.replicas > 1`)
	var ce *cel.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Hint, "old, new, change and actor") {
		t.Errorf("object in a change filter: %v, want a hint naming the variables", err)
	}
	if _, err := cel.Conditions().(materialize.ChangeConditions).CompileChange(`actor.user == "bob"`); err != nil {
		t.Errorf("Conditions().CompileChange: %v", err)
	}
}
