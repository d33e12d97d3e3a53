package materialize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// plainHistory is History without its MarshalJSON: what encoding/json
// writes of the struct.
type plainHistory materialize.History

// sameAsEncodingJSON fails t unless h.MarshalJSON writes, byte for byte,
// what a json.Encoder without HTML escaping writes of the struct, and
// json.Marshal writes the same of both.
func sameAsEncodingJSON(t *testing.T, what string, h *materialize.History) {
	t.Helper()
	got, err := h.MarshalJSON()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	wantErr := enc.Encode((*plainHistory)(h))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: MarshalJSON error %v, encoding/json error %v", what, err, wantErr)
	}
	if err != nil {
		return
	}
	if want := bytes.TrimSuffix(b.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
		t.Fatalf("%s: MarshalJSON writes\n%s\nencoding/json\n%s", what, got, want)
	}
	// AppendJSON appends the same after what the buffer holds, also into
	// a buffer that held a longer history before.
	used := append(bytes.Repeat([]byte("x"), 2*len(got)+16)[:0], "prefix "...)
	for _, prefix := range [][]byte{[]byte("prefix "), used} {
		appended, err := h.AppendJSON(prefix)
		if err != nil || !bytes.Equal(appended, append([]byte("prefix "), got...)) {
			t.Fatalf("%s: AppendJSON after %q writes %q (%v), want the prefix and %s", what, prefix, appended, err, got)
		}
	}
	m1, err1 := json.Marshal(h)
	m2, err2 := json.Marshal((*plainHistory)(h))
	if err1 != nil || err2 != nil || !bytes.Equal(m1, m2) {
		t.Fatalf("%s: json.Marshal of the history %s (%v), of the struct %s (%v)", what, m1, err1, m2, err2)
	}
}

// TestHistoryMarshalJSON: History's MarshalJSON writes what encoding/json
// writes, for histories History made and for values that take encoding/
// json's escaping (HTML characters, U+2028, invalid UTF-8, control
// characters), numbers, nil and empty maps and lists, a body with white
// space (compacted), and bodies that are not JSON (an error either way).
func TestHistoryMarshalJSON(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	for _, name := range []string{"a", "b", "c"} {
		h, err := m.History(context.Background(), idOf(j.cms, name, "shop"))
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Versions()) == 0 {
			t.Fatalf("no version of %s", name)
		}
		sameAsEncodingJSON(t, "history of "+name, h)
		// A body replaced after History is compacted again.
		h.Versions()[0].Object = json.RawMessage(" {\"a\" : [1, 2]}\n")
		sameAsEncodingJSON(t, "history of "+name+" with a spaced body", h)
		h.Versions()[0].Object = json.RawMessage(`{"a":`)
		sameAsEncodingJSON(t, "history of "+name+" with a broken body", h)
	}
	odd := "<a href=\"x\">&</a>\u2028\u2029 \x01\x7f tab\t é \xff"
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	v := &materialize.Version{Ref: event.ResourceRef{Name: odd, Namespace: "ns"}, WatchType: event.Modified, ResourceVersion: odd,
		ObservedAt: at, Origin: materialize.OriginWatch, Object: json.RawMessage(`{"s":"` + "<&>\u2028" + `"}`),
		Changes: []materialize.FieldChange{
			{Path: odd, Op: materialize.OpReplace, Before: map[string]any{"z": nil, "a": []any{}, odd: map[string]any{}, "n": json.Number("-1.5e10")},
				After: []any{true, false, nil, json.Number("0"), "x", map[string]any(nil), []any(nil), 1.5, int64(7)}},
			{Path: "p", Op: materialize.OpAdd, After: json.Number("")},
			{Path: "q", Op: materialize.OpRemove, Before: odd, FieldManager: &materialize.FieldManager{Manager: odd, Operation: "Apply"}},
		},
		FieldManagers: []materialize.FieldManager{{Manager: "m", Operation: "Update", Subresource: "status", APIVersion: "v1", Time: at}},
	}
	h := &materialize.History{Entries: []materialize.Entry{
		{Kind: materialize.EntryVersion, StreamID: odd, EventID: "e", ObservedAt: at, Version: v},
		{Kind: materialize.EntryGap, Gap: &event.Gap{Reason: odd}},
	}, Warnings: []string{odd, ""}, Next: odd}
	sameAsEncodingJSON(t, "odd values", h)
	v.Changes[1].After = json.Number("01")
	sameAsEncodingJSON(t, "an invalid number", h)

	// Versions whose references and field managers repeat or change by
	// one field: what the encoder remembers of the one before applies
	// only to the same.
	ref := event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "1"}
	fm := materialize.FieldManager{Manager: "kubectl", Operation: "Update", APIVersion: "apps/v1", Time: at}
	h = &materialize.History{}
	for i, change := range []func(r *event.ResourceRef, m *materialize.FieldManager){
		func(*event.ResourceRef, *materialize.FieldManager) {},
		func(r *event.ResourceRef, _ *materialize.FieldManager) { r.ResourceVersion = "2" },
		func(r *event.ResourceRef, m *materialize.FieldManager) { r.UID, m.Time = "u2", at.Add(time.Second) },
		func(r *event.ResourceRef, m *materialize.FieldManager) {
			r.ResourceVersion, m.Subresource = "", "status"
		},
		func(r *event.ResourceRef, _ *materialize.FieldManager) { r.Kind, r.ResourceVersion = odd, "3" },
		func(r *event.ResourceRef, m *materialize.FieldManager) {
			*r, m.Manager = event.ResourceRef{ResourceVersion: "4"}, odd
		},
		func(r *event.ResourceRef, m *materialize.FieldManager) {
			*r, *m = event.ResourceRef{}, materialize.FieldManager{}
		},
		func(r *event.ResourceRef, _ *materialize.FieldManager) { r.Name = "web" },
		func(*event.ResourceRef, *materialize.FieldManager) {},
	} {
		change(&ref, &fm)
		m := fm
		h.Entries = append(h.Entries, materialize.Entry{Kind: materialize.EntryVersion, StreamID: "s", EventID: fmt.Sprint(i), ObservedAt: at,
			Version: &materialize.Version{Ref: ref, ResourceVersion: ref.ResourceVersion, ObservedAt: at, Object: json.RawMessage(`{}`),
				Changes:       []materialize.FieldChange{{Path: "p", Op: materialize.OpAdd, After: "x", FieldManager: &m}},
				FieldManagers: []materialize.FieldManager{fm, {Manager: "other"}, fm}}})
	}
	sameAsEncodingJSON(t, "references and field managers that repeat", h)
}
