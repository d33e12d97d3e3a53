package why

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// changesOf returns the changes of one node in [from, to], in journal order.
func (e *Explainer) changesOf(ctx context.Context, n *gnode, from, to time.Time, secretValues bool) ([]Change, error) {
	h, err := e.m.History(ctx, n.ID, materialize.Since(from), materialize.Until(to))
	if err != nil {
		return nil, err
	}
	var prev map[string]any
	var prevAt time.Time
	if rec, err := e.store.LatestAt(ctx, n.ID, from.Add(-time.Nanosecond)); err == nil && rec.WatchType != event.Deleted {
		prev, _ = decode(rec.Object)
		prevAt = rec.ObservedAt
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	secret := n.ID.Group == "" && n.ID.Resource == "secrets"
	var out []Change
	for _, entry := range h.Entries {
		v := entry.Version
		if v == nil {
			continue
		}
		var cur map[string]any
		if v.WatchType != event.Deleted {
			cur, _ = decode(v.Object)
		}
		c := Change{Object: n.ID, Kind: n.Kind, ObservedAt: v.ObservedAt, EventID: entry.EventID, StreamID: entry.StreamID, Origin: v.Origin}
		switch {
		case v.WatchType == event.Deleted:
			c.Type = ChangeDeleted
			if v.Inferred != nil {
				c.Between = &Interval{From: v.Inferred.From, To: v.Inferred.To}
			}
		case prev == nil || v.Recreated:
			if v.Origin != materialize.OriginWatch {
				// First seen by a list: the object already existed; that is
				// where recording began, not a change.
				prev, prevAt = cur, v.ObservedAt
				continue
			}
			c.Type = ChangeCreated
		default:
			c.Type = ChangeModified
			if v.Origin != materialize.OriginWatch {
				c.Between = &Interval{From: prevAt, To: v.ObservedAt}
			}
		}
		c.Fields = v.Changes
		if secret && !secretValues {
			c.Fields = hideSecretValues(v.Changes)
		}
		c.Transitions = transitions(n.ID, v.ObservedAt, prev, cur)
		c.Who = whoOf(v)
		prev, prevAt = cur, v.ObservedAt
		if c.Type == ChangeModified && len(c.Fields) == 0 && len(c.Transitions) == 0 && !secret {
			// Only server-owned metadata changed.
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// hideSecretValues replaces the values of a Secret's data, stringData and
// last-applied annotation by hashes; key names stay.
func hideSecretValues(changes []materialize.FieldChange) []materialize.FieldChange {
	out := make([]materialize.FieldChange, len(changes))
	for i, c := range changes {
		if strings.HasPrefix(c.Path, "data") || strings.HasPrefix(c.Path, "stringData") || strings.Contains(c.Path, "last-applied-configuration") {
			c.Before, c.After = hashed(c.Before), hashed(c.After)
		}
		out[i] = c
	}
	return out
}

// redactedData is how a value the Collector redacted reads in data.
var redactedData = base64.StdEncoding.EncodeToString([]byte(event.RedactedValue))

// hashed returns a value with every string replaced by its hash.
func hashed(v any) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == event.RedactedValue || v == redactedData {
			return "redacted"
		}
		sum := sha256.Sum256([]byte(v))
		return "sha256:" + hex.EncodeToString(sum[:8])
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = hashed(x)
		}
		return out
	default:
		return "sha256:(not a string)"
	}
}

// whoOf says who made a version: the audited user, else the field
// manager of its changes.
func whoOf(v *materialize.Version) *Who {
	w := &Who{}
	for _, p := range v.Provenance {
		w.User = p.User
		break
	}
	w.Manager = managerOf(v)
	if w.User == "" && w.Manager == "" {
		return nil
	}
	w.Actor = actorOf(w.User, w.Manager)
	return w
}

// managerOf is the field manager of a version's spec or data changes
// first, then of any change, then the first of its FieldManagers.
func managerOf(v *materialize.Version) string {
	for _, statusToo := range []bool{false, true} {
		for _, c := range v.Changes {
			if c.FieldManager != nil && (statusToo || !strings.HasPrefix(c.Path, "status")) {
				return c.FieldManager.Manager
			}
		}
	}
	if len(v.FieldManagers) > 0 {
		return v.FieldManagers[0].Manager
	}
	return ""
}

// actorOf guesses whether a person or a controller made a change.
func actorOf(user, manager string) string {
	if user != "" {
		switch {
		case user == "system:admin" || user == "kubernetes-admin":
			return ActorPerson
		case strings.HasPrefix(user, "system:"):
			return ActorController
		default:
			return ActorPerson
		}
	}
	switch {
	case strings.HasPrefix(manager, "kubectl") || manager == "helm" || manager == "k9s":
		return ActorPerson
	case strings.HasPrefix(manager, "kube-") || manager == "kubelet" || strings.HasSuffix(manager, "controller") || strings.HasSuffix(manager, "-controller-manager"):
		return ActorController
	}
	return ActorUnknown
}

// state is one piece of an object's status.
type state struct{ value, reason, message string }

// statusOf summarizes the status parts that transitions are read from.
func statusOf(body map[string]any) map[string]state {
	out := map[string]state{}
	if body == nil {
		return out
	}
	for _, c := range items(body, "status", "conditions") {
		out["condition "+str(c, "type")] = state{str(c, "status"), str(c, "reason"), str(c, "message")}
	}
	if p := str(body, "status", "phase"); p != "" {
		out["phase"] = state{value: p}
	}
	for _, list := range []string{"initContainerStatuses", "containerStatuses"} {
		for _, c := range items(body, "status", list) {
			name := "container " + str(c, "name")
			for _, s := range []string{"waiting", "running", "terminated"} {
				if st, ok := get(c, "state", s).(map[string]any); ok {
					out[name] = state{s, str(st, "reason"), str(st, "message")}
				}
			}
			if st, ok := get(c, "lastState", "terminated").(map[string]any); ok {
				out[name+" last termination"] = state{"terminated", str(st, "reason"), str(st, "message")}
			}
			if n, ok := get(c, "restartCount").(float64); ok {
				out[name+" restarts"] = state{value: strconv.FormatFloat(n, 'f', -1, 64)}
			}
		}
	}
	return out
}

// transitions compares the status of two versions.
func transitions(id storage.ObjectID, at time.Time, before, after map[string]any) []Transition {
	b, a := statusOf(before), statusOf(after)
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []Transition
	for _, k := range keys {
		old, had := b[k]
		cur := a[k]
		if had && old.value == cur.value && old.reason == cur.reason {
			continue
		}
		t := Transition{Object: id, ObservedAt: at, What: k, From: old.value, To: cur.value, Reason: cur.reason, Message: cur.message}
		t.Bad = isBad(k, old, had, cur)
		out = append(out, t)
	}
	return out
}

// badWaiting and badTerminated are the container reasons that are bad
// states.
var (
	badWaiting = map[string]bool{"CrashLoopBackOff": true, "ImagePullBackOff": true, "ErrImagePull": true,
		"CreateContainerConfigError": true, "CreateContainerError": true, "InvalidImageName": true,
		"RunContainerError": true, "ErrImageNeverPull": true, "PreStartHookError": true, "PostStartHookError": true}
	badTerminated = map[string]bool{"OOMKilled": true, "Error": true, "ContainerCannotRun": true, "DeadlineExceeded": true}
)

// isBad says whether a status piece turned bad (see the package
// documentation for the rules).
func isBad(what string, old state, had bool, cur state) bool {
	switch {
	case strings.HasPrefix(what, "container "):
		if strings.HasSuffix(what, " restarts") {
			return false
		}
		return cur.value == "waiting" && badWaiting[cur.reason] || cur.value == "terminated" && badTerminated[cur.reason]
	case what == "phase":
		return cur.value == "Failed"
	case what == "condition PodScheduled":
		return cur.value == "False" && cur.reason == "Unschedulable"
	case what == "condition Progressing":
		return cur.value == "False" && cur.reason == "ProgressDeadlineExceeded"
	case what == "condition ReplicaFailure":
		return cur.value == "True"
	case what == "condition MemoryPressure", what == "condition DiskPressure", what == "condition PIDPressure", what == "condition NetworkUnavailable":
		return cur.value == "True"
	case strings.HasPrefix(what, "condition "):
		// Ready, Available, ContainersReady, … going away from True; a
		// condition first reported False (a Pod starting) is not bad.
		return had && old.value == "True" && cur.value != "True"
	}
	return false
}
