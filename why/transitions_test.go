package why

import (
	"testing"
	"time"

	"github.com/krply/krply/storage"
)

// TestBadTransitions pins the rules of a bad transition (doc.go).
func TestBadTransitions(t *testing.T) {
	cond := func(typ, status, reason string) map[string]any {
		return map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": typ, "status": status, "reason": reason}}}}
	}
	ctr := func(state, reason string, last string) map[string]any {
		c := map[string]any{"name": "app", "state": map[string]any{state: map[string]any{"reason": reason}}}
		if last != "" {
			c["lastState"] = map[string]any{"terminated": map[string]any{"reason": last}}
		}
		return map[string]any{"status": map[string]any{"containerStatuses": []any{c}}}
	}
	for _, tc := range []struct {
		name          string
		before, after map[string]any
		bad           string // the What of the bad transition, "" for none
	}{
		{"crash loop", ctr("running", "", ""), ctr("waiting", "CrashLoopBackOff", ""), "container app"},
		{"image pull", nil, ctr("waiting", "ImagePullBackOff", ""), "container app"},
		{"config error", ctr("waiting", "ContainerCreating", ""), ctr("waiting", "CreateContainerConfigError", ""), "container app"},
		{"starting is fine", nil, ctr("waiting", "ContainerCreating", ""), ""},
		{"OOM killed", ctr("running", "", ""), ctr("running", "", "OOMKilled"), "container app last termination"},
		{"completed is fine", ctr("running", "", ""), ctr("terminated", "Completed", ""), ""},
		{"unschedulable", nil, cond("PodScheduled", "False", "Unschedulable"), "condition PodScheduled"},
		{"progress deadline", cond("Progressing", "True", "NewReplicaSetAvailable"), cond("Progressing", "False", "ProgressDeadlineExceeded"), "condition Progressing"},
		{"ready lost", cond("Ready", "True", ""), cond("Ready", "False", "ContainersNotReady"), "condition Ready"},
		{"node unknown", cond("Ready", "True", ""), cond("Ready", "Unknown", "NodeStatusUnknown"), "condition Ready"},
		{"not ready at start is fine", nil, cond("Ready", "False", "ContainersNotReady"), ""},
		{"memory pressure", cond("MemoryPressure", "False", ""), cond("MemoryPressure", "True", ""), "condition MemoryPressure"},
		{"replica failure", nil, cond("ReplicaFailure", "True", "FailedCreate"), "condition ReplicaFailure"},
		{"failed phase", map[string]any{"status": map[string]any{"phase": "Running"}}, map[string]any{"status": map[string]any{"phase": "Failed"}}, "phase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bad string
			for _, tr := range transitions(storage.ObjectID{}, time.Time{}, tc.before, tc.after) {
				if tr.Bad {
					bad = tr.What
				}
			}
			if bad != tc.bad {
				t.Errorf("bad transition %q; want %q", bad, tc.bad)
			}
		})
	}
}
