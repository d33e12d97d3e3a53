package materialize

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/krply/krply/event"
)

// MarshalJSON writes the history exactly as encoding/json writes the
// struct without this method (HTML characters left as they are, as a
// json.Encoder with SetEscapeHTML(false) writes them; json.Marshal escapes
// them afterwards as it does for any value), compact. It exists for speed:
// a version's body that History decoded whole and found compact is copied
// as it is instead of being scanned again, and the rest is written without
// reflection. Anything it does not know is written by encoding/json.
func (h History) MarshalJSON() ([]byte, error) {
	e := historyEncoder{buf: make([]byte, 0, 512+historySize(&h))}
	e.history(&h)
	return e.buf, e.err
}

// historySize estimates the JSON size of a history from its bodies and
// the number of its parts, generously: growing the buffer costs more.
func historySize(h *History) int {
	n := 0
	for i := range h.Entries {
		n += 200
		if v := h.Entries[i].Version; v != nil {
			n += len(v.Object) + 500 + 250*len(v.Changes) + 150*len(v.FieldManagers) + 300*len(v.Provenance)
		}
	}
	return n
}

// historyEncoder appends JSON to buf; the first error stops it.
type historyEncoder struct {
	buf []byte
	err error
}

func (e *historyEncoder) history(h *History) {
	e.buf = append(e.buf, `{"object":`...)
	e.buf = append(e.buf, `{"clusterID":`...)
	e.str(h.Object.ClusterID)
	e.optStr(`,"group":`, h.Object.Group)
	e.buf = append(e.buf, `,"resource":`...)
	e.str(h.Object.Resource)
	e.optStr(`,"namespace":`, h.Object.Namespace)
	e.buf = append(e.buf, `,"name":`...)
	e.str(h.Object.Name)
	e.buf = append(e.buf, '}')
	list(e, `,"entries":[`, h.Entries, e.entry)
	list(e, `,"warnings":[`, h.Warnings, func(w *string) { e.str(*w) })
	e.optStr(`,"next":`, h.Next)
	e.buf = append(e.buf, '}')
}

func (e *historyEncoder) entry(en *Entry) {
	e.buf = append(e.buf, `{"kind":`...)
	e.str(string(en.Kind))
	e.buf = append(e.buf, `,"streamID":`...)
	e.str(en.StreamID)
	e.buf = append(e.buf, `,"eventID":`...)
	e.str(en.EventID)
	e.buf = append(e.buf, `,"observedAt":`...)
	e.time(en.ObservedAt)
	if en.Version != nil {
		e.buf = append(e.buf, `,"version":`...)
		e.version(en.Version)
	}
	if en.Gap != nil {
		e.buf = append(e.buf, `,"gap":`...)
		e.reflected(en.Gap)
	}
	if en.Coverage != nil {
		e.buf = append(e.buf, `,"coverage":`...)
		e.reflected(en.Coverage)
	}
	e.buf = append(e.buf, '}')
}

func (e *historyEncoder) version(v *Version) {
	e.buf = append(e.buf, `{"ref":`...)
	e.ref(&v.Ref)
	e.buf = append(e.buf, `,"watchType":`...)
	e.str(string(v.WatchType))
	e.buf = append(e.buf, `,"resourceVersion":`...)
	e.str(v.ResourceVersion)
	e.buf = append(e.buf, `,"observedAt":`...)
	e.time(v.ObservedAt)
	e.buf = append(e.buf, `,"origin":`...)
	e.str(string(v.Origin))
	e.optStr(`,"baselineID":`, v.BaselineID)
	if v.Inferred != nil {
		e.buf = append(e.buf, `,"inferred":`...)
		e.reflected(v.Inferred)
	}
	if v.Recreated {
		e.buf = append(e.buf, `,"recreated":true`...)
	}
	if len(v.Object) > 0 {
		e.buf = append(e.buf, `,"object":`...)
		e.object(v)
	}
	list(e, `,"changes":[`, v.Changes, e.change)
	list(e, `,"fieldManagers":[`, v.FieldManagers, e.manager)
	if len(v.Provenance) > 0 {
		e.buf = append(e.buf, `,"provenance":`...)
		e.reflected(v.Provenance)
	}
	e.buf = append(e.buf, '}')
}

// list writes a list field (open, e.g. `,"entries":[`, then its items),
// left out when empty.
func list[T any](e *historyEncoder, open string, items []T, one func(*T)) {
	if len(items) == 0 {
		return
	}
	e.buf = append(e.buf, open...)
	for i := range items {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		one(&items[i])
	}
	e.buf = append(e.buf, ']')
}

// object writes a version's body: as it is when History found it whole and
// compact (and it was not replaced since), compacted by encoding/json
// otherwise, which also refuses a body that is not JSON.
func (e *historyEncoder) object(v *Version) {
	if len(v.compactObject) == len(v.Object) && &v.compactObject[0] == &v.Object[0] {
		e.buf = append(e.buf, v.Object...)
		return
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v.Object); err != nil {
		e.fail(err)
		return
	}
	e.buf = append(e.buf, b.Bytes()...)
}

func (e *historyEncoder) ref(r *event.ResourceRef) {
	e.buf = append(e.buf, '{')
	start := len(e.buf)
	for _, f := range [...]struct{ name, value string }{{"group", r.Group}, {"version", r.Version}, {"kind", r.Kind},
		{"resource", r.Resource}, {"namespace", r.Namespace}, {"name", r.Name}, {"uid", r.UID}, {"resourceVersion", r.ResourceVersion}} {
		if f.value == "" {
			continue
		}
		if len(e.buf) > start {
			e.buf = append(e.buf, ',')
		}
		e.buf = append(e.buf, '"')
		e.buf = append(e.buf, f.name...)
		e.buf = append(e.buf, `":`...)
		e.str(f.value)
	}
	e.buf = append(e.buf, '}')
}

func (e *historyEncoder) change(c *FieldChange) {
	e.buf = append(e.buf, `{"path":`...)
	e.str(c.Path)
	e.buf = append(e.buf, `,"op":`...)
	e.str(string(c.Op))
	if c.Before != nil {
		e.buf = append(e.buf, `,"before":`...)
		e.value(c.Before)
	}
	if c.After != nil {
		e.buf = append(e.buf, `,"after":`...)
		e.value(c.After)
	}
	if c.FieldManager != nil {
		e.buf = append(e.buf, `,"fieldManager":`...)
		e.manager(c.FieldManager)
	}
	e.buf = append(e.buf, '}')
}

func (e *historyEncoder) manager(m *FieldManager) {
	e.buf = append(e.buf, `{"manager":`...)
	e.str(m.Manager)
	e.buf = append(e.buf, `,"operation":`...)
	e.str(m.Operation)
	e.optStr(`,"subresource":`, m.Subresource)
	e.optStr(`,"apiVersion":`, m.APIVersion)
	if !m.Time.IsZero() {
		e.buf = append(e.buf, `,"time":`...)
		e.time(m.Time)
	}
	e.buf = append(e.buf, '}')
}

// value writes a decoded JSON value (see FieldChange.Before).
func (e *historyEncoder) value(v any) {
	switch t := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, t)
	case string:
		e.str(t)
	case json.Number:
		if !validNumber(string(t)) {
			e.reflected(t) // "" is 0, anything else invalid an error
			return
		}
		e.buf = append(e.buf, t...)
	case map[string]any:
		if t == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.str(k)
			e.buf = append(e.buf, ':')
			e.value(t[k])
		}
		e.buf = append(e.buf, '}')
	case []any:
		if t == nil {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.buf = append(e.buf, '[')
		for i, item := range t {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.value(item)
		}
		e.buf = append(e.buf, ']')
	default:
		e.reflected(v)
	}
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	d := fastDecoder{data: []byte(s)}
	_, ok := d.number()
	return ok && d.pos == len(s)
}

func (e *historyEncoder) optStr(key, s string) {
	if s != "" {
		e.buf = append(e.buf, key...)
		e.str(s)
	}
}

// str writes a JSON string: plain printable ASCII as it is, anything else
// as encoding/json escapes it.
func (e *historyEncoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			e.reflected(s)
			return
		}
	}
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, '"')
}

func (e *historyEncoder) time(t time.Time) {
	// As time.Time.MarshalJSON writes a time it takes: RFC 3339 with
	// nanoseconds, four digits of year and a zone offset under a day.
	if _, offset := t.Zone(); t.Year() >= 0 && t.Year() <= 9999 && offset > -24*3600 && offset < 24*3600 {
		e.buf = append(e.buf, '"')
		e.buf = t.AppendFormat(e.buf, time.RFC3339Nano)
		e.buf = append(e.buf, '"')
		return
	}
	raw, err := t.MarshalJSON()
	if err != nil {
		e.fail(err)
		return
	}
	e.buf = append(e.buf, raw...)
}

// reflected writes v by encoding/json, HTML characters as they are.
func (e *historyEncoder) reflected(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		e.fail(err)
		return
	}
	e.buf = append(e.buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

func (e *historyEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
