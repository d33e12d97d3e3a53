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
	return h.AppendJSON(nil)
}

// AppendJSON appends what MarshalJSON writes to b and returns the extended
// buffer: a server writing many histories can reuse its buffers instead
// of allocating one for each (a history of 100 versions takes tens of
// kilobytes).
func (h *History) AppendJSON(b []byte) ([]byte, error) {
	var e historyEncoder
	out := e.history(slices.Grow(b, 512+historySize(h)), h)
	return out, e.err
}

// historySize estimates the JSON size of a history from the lengths of
// its strings and bodies: growing the buffer costs a copy, and a buffer
// too large costs the garbage collector.
func historySize(h *History) int {
	n := 0
	for i := range h.Entries {
		en := &h.Entries[i]
		n += 100 + len(en.StreamID) + len(en.EventID)
		if en.Gap != nil || en.Coverage != nil || en.Confirmation != nil {
			n += 300
		}
		v := en.Version
		if v == nil {
			continue
		}
		r := &v.Ref
		n += 250 + len(r.Group) + len(r.Version) + len(r.Kind) + len(r.Resource) + len(r.Namespace) + len(r.Name) + len(r.UID) +
			len(r.ResourceVersion) + len(v.ResourceVersion) + len(v.BaselineID) + len(v.Object) + 300*len(v.Provenance)
		for j := range v.Changes {
			c := &v.Changes[j]
			n += 100 + len(c.Path)
			if c.FieldManager != nil {
				n += managerSize(c.FieldManager)
			}
		}
		for j := range v.FieldManagers {
			n += managerSize(&v.FieldManagers[j])
		}
	}
	return n
}

// managerSize estimates the JSON size of a field manager.
func managerSize(m *FieldManager) int {
	return 100 + len(m.Manager) + len(m.Operation) + len(m.Subresource) + len(m.APIVersion)
}

// historyEncoder appends JSON to the buffer each method takes and
// returns (kept in locals rather than a field: a store of a pointer costs
// a write barrier while the garbage collector marks); the first error
// stops it.
type historyEncoder struct {
	err error
	// times are the last times written, next the one to replace.
	times [2]struct {
		t    time.Time
		n    int
		text [48]byte
	}
	next int
	// ref is the text of the last reference written but its
	// resourceVersion, refOf what it was written for; manager the text of
	// the last field manager written, managerOf what for. A history
	// repeats them from version to version.
	refText     []byte
	refOf       event.ResourceRef
	managerText []byte
	managerOf   FieldManager
}

func (e *historyEncoder) history(b []byte, h *History) []byte {
	b = append(b, `{"object":`...)
	b = append(b, `{"clusterID":`...)
	b = e.str(b, h.Object.ClusterID)
	b = e.optStr(b, `,"group":`, h.Object.Group)
	b = append(b, `,"resource":`...)
	b = e.str(b, h.Object.Resource)
	b = e.optStr(b, `,"namespace":`, h.Object.Namespace)
	b = append(b, `,"name":`...)
	b = e.str(b, h.Object.Name)
	b = append(b, '}')
	b = list(e, b, `,"entries":[`, h.Entries, (*historyEncoder).entry)
	b = list(e, b, `,"warnings":[`, h.Warnings, func(e *historyEncoder, b []byte, w *string) []byte { return e.str(b, *w) })
	b = e.optStr(b, `,"next":`, h.Next)
	return append(b, '}')
}

func (e *historyEncoder) entry(b []byte, en *Entry) []byte {
	b = append(b, `{"kind":`...)
	b = e.str(b, string(en.Kind))
	b = append(b, `,"streamID":`...)
	b = e.str(b, en.StreamID)
	b = append(b, `,"eventID":`...)
	b = e.str(b, en.EventID)
	b = append(b, `,"observedAt":`...)
	b = e.time(b, en.ObservedAt)
	if en.Version != nil {
		b = append(b, `,"version":`...)
		b = e.version(b, en.Version)
	}
	if en.Gap != nil {
		b = append(b, `,"gap":`...)
		b = e.reflected(b, en.Gap)
	}
	if en.Coverage != nil {
		b = append(b, `,"coverage":`...)
		b = e.reflected(b, en.Coverage)
	}
	if c := en.Confirmation; c != nil {
		b = append(b, `,"confirmation":{"resourceVersion":`...)
		b = e.str(b, c.ResourceVersion)
		b = append(b, `,"versionEventID":`...)
		b = e.str(b, c.VersionEventID)
		b = e.optStr(b, `,"baselineID":`, c.BaselineID)
		b = append(b, '}')
	}
	return append(b, '}')
}

func (e *historyEncoder) version(b []byte, v *Version) []byte {
	b = append(b, `{"ref":`...)
	b = e.ref(b, &v.Ref)
	b = append(b, `,"watchType":`...)
	b = e.str(b, string(v.WatchType))
	b = append(b, `,"resourceVersion":`...)
	b = e.str(b, v.ResourceVersion)
	b = append(b, `,"observedAt":`...)
	b = e.time(b, v.ObservedAt)
	b = append(b, `,"origin":`...)
	b = e.str(b, string(v.Origin))
	b = e.optStr(b, `,"baselineID":`, v.BaselineID)
	if v.Inferred != nil {
		b = append(b, `,"inferred":`...)
		b = e.reflected(b, v.Inferred)
	}
	if v.Recreated {
		b = append(b, `,"recreated":true`...)
	}
	if len(v.Object) > 0 {
		b = append(b, `,"object":`...)
		b = e.object(b, v)
	}
	b = list(e, b, `,"changes":[`, v.Changes, (*historyEncoder).change)
	b = list(e, b, `,"fieldManagers":[`, v.FieldManagers, (*historyEncoder).manager)
	if len(v.Provenance) > 0 {
		b = append(b, `,"provenance":`...)
		b = e.reflected(b, v.Provenance)
	}
	return append(b, '}')
}

// list writes a list field (open, e.g. `,"entries":[`, then its items),
// left out when empty.
func list[T any](e *historyEncoder, b []byte, open string, items []T, one func(*historyEncoder, []byte, *T) []byte) []byte {
	if len(items) == 0 {
		return b
	}
	b = append(b, open...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(e, b, &items[i])
	}
	return append(b, ']')
}

// object writes a version's body: as it is when History found it whole and
// compact (and it was not replaced since), compacted by encoding/json
// otherwise, which also refuses a body that is not JSON.
func (e *historyEncoder) object(b []byte, v *Version) []byte {
	if len(v.compactObject) == len(v.Object) && &v.compactObject[0] == &v.Object[0] {
		return append(b, v.Object...)
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v.Object); err != nil {
		e.fail(err)
		return b
	}
	return append(b, c.Bytes()...)
}

func (e *historyEncoder) ref(b []byte, r *event.ResourceRef) []byte {
	b = append(b, '{')
	start := len(b)
	if last := e.refOf; e.refText != nil && r.Group == last.Group && r.Version == last.Version && r.Kind == last.Kind &&
		r.Resource == last.Resource && r.Namespace == last.Namespace && r.Name == last.Name && r.UID == last.UID {
		b = append(b, e.refText...)
	} else {
		for _, f := range [...]struct{ name, value string }{{"group", r.Group}, {"version", r.Version}, {"kind", r.Kind},
			{"resource", r.Resource}, {"namespace", r.Namespace}, {"name", r.Name}, {"uid", r.UID}} {
			if f.value == "" {
				continue
			}
			if len(b) > start {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, f.name...)
			b = append(b, `":`...)
			b = e.str(b, f.value)
		}
		e.refText, e.refOf = append(e.refText[:0], b[start:]...), *r
	}
	if r.ResourceVersion != "" {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, `"resourceVersion":`...)
		b = e.str(b, r.ResourceVersion)
	}
	return append(b, '}')
}

func (e *historyEncoder) change(b []byte, c *FieldChange) []byte {
	b = append(b, `{"path":`...)
	b = e.str(b, c.Path)
	b = append(b, `,"op":`...)
	b = e.str(b, string(c.Op))
	if c.Before != nil {
		b = append(b, `,"before":`...)
		b = e.value(b, c.Before)
	}
	if c.After != nil {
		b = append(b, `,"after":`...)
		b = e.value(b, c.After)
	}
	if c.FieldManager != nil {
		b = append(b, `,"fieldManager":`...)
		b = e.manager(b, c.FieldManager)
	}
	return append(b, '}')
}

func (e *historyEncoder) manager(b []byte, m *FieldManager) []byte {
	if e.managerText != nil && *m == e.managerOf {
		return append(b, e.managerText...)
	}
	start := len(b)
	b = e.writeManager(b, m)
	if e.err == nil {
		e.managerText, e.managerOf = append(e.managerText[:0], b[start:]...), *m
	}
	return b
}

func (e *historyEncoder) writeManager(b []byte, m *FieldManager) []byte {
	b = append(b, `{"manager":`...)
	b = e.str(b, m.Manager)
	b = append(b, `,"operation":`...)
	b = e.str(b, m.Operation)
	b = e.optStr(b, `,"subresource":`, m.Subresource)
	b = e.optStr(b, `,"apiVersion":`, m.APIVersion)
	if !m.Time.IsZero() {
		b = append(b, `,"time":`...)
		b = e.time(b, m.Time)
	}
	return append(b, '}')
}

// value writes a decoded JSON value (see FieldChange.Before).
func (e *historyEncoder) value(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, t)
	case string:
		return e.str(b, t)
	case json.Number:
		if !validNumber(string(t)) {
			return e.reflected(b, t) // "" is 0, anything else invalid an error
		}
		return append(b, t...)
	case map[string]any:
		if t == nil {
			return append(b, "null"...)
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.str(b, k)
			b = append(b, ':')
			b = e.value(b, t[k])
		}
		return append(b, '}')
	case []any:
		if t == nil {
			return append(b, "null"...)
		}
		b = append(b, '[')
		for i, item := range t {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.value(b, item)
		}
		return append(b, ']')
	}
	return e.reflected(b, v)
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

func (e *historyEncoder) optStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, key...)
	return e.str(b, s)
}

// str writes a JSON string: plain printable ASCII as it is, anything else
// as encoding/json escapes it.
func (e *historyEncoder) str(b []byte, s string) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// Eight bytes at a time: any below 0x20 or from 0x7f, or a quote
		// or a backslash.
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if hasLess(x, 0x20)|hasZero(x^(lsb*0x7f))|hasZero(x^(lsb*'"'))|hasZero(x^(lsb*'\\'))|x&(lsb*0x80) != 0 {
			return e.reflected(b, s)
		}
	}
	for ; i < len(s); i++ {
		if needsEscape[s[i]] {
			return e.reflected(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// lsb has the lowest bit of each byte set.
const lsb = 0x0101010101010101

// hasZero is not zero when a byte of x is zero; hasLess when a byte of x,
// all below 0x80, is below n (n at most 0x80).
func hasZero(x uint64) uint64    { return (x - lsb) &^ x & (lsb * 0x80) }
func hasLess(x, n uint64) uint64 { return (x - lsb*n) &^ x & (lsb * 0x80) }

// needsEscape marks the bytes str leaves to encoding/json: control
// characters, the quote, the backslash, DEL and bytes beyond ASCII.
var needsEscape = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c >= 0x7f || c == '"' || c == '\\'
	}
	return t
}()

func (e *historyEncoder) time(b []byte, t time.Time) []byte {
	// A history repeats its times: an entry's is its version's, a field
	// manager's stays.
	for i := range e.times {
		if c := &e.times[i]; c.n > 0 && c.t == t {
			return append(b, c.text[:c.n]...)
		}
	}
	// As time.Time.MarshalJSON writes a time it takes: RFC 3339 with
	// nanoseconds, four digits of year and a zone offset under a day.
	if _, offset := t.Zone(); t.Year() >= 0 && t.Year() <= 9999 && offset > -24*3600 && offset < 24*3600 {
		start := len(b)
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
		if c := &e.times[e.next]; len(b)-start <= len(c.text) {
			c.t, c.n = t, copy(c.text[:], b[start:])
			e.next = (e.next + 1) % len(e.times)
		}
		return b
	}
	raw, err := t.MarshalJSON()
	if err != nil {
		e.fail(err)
		return b
	}
	return append(b, raw...)
}

// reflected writes v by encoding/json, HTML characters as they are.
func (e *historyEncoder) reflected(b []byte, v any) []byte {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		e.fail(err)
		return b
	}
	return append(b, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...)
}

func (e *historyEncoder) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}
