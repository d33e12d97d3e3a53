package sqlite

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/krply/krply/event"
)

var typeCodes = map[event.RecordType]int{
	event.TypeEvent:            codeEvent,
	event.TypeBaseline:         2,
	event.TypeGap:              3,
	event.TypeCoverageChange:   4,
	event.TypeAuditCorrelation: 5,
	event.TypeSnapshot:         6,
	event.TypeCheckpoint:       7,
	event.TypePlan:             8,
}

var watchCodes = map[event.WatchType]int{
	"":             0,
	event.Added:    1,
	event.Modified: 2,
	event.Deleted:  3,
	event.Bookmark: 4,
	event.Error:    5,
}

const codeDeleted = 3

var (
	typeNames  = invert(typeCodes)
	watchNames = invert(watchCodes)
)

func invert[K comparable](m map[K]int) map[int]K {
	out := make(map[int]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// encodeTime stores a time as Unix nanoseconds; the zero time (which has
// no Unix nanosecond value) is stored as the smallest integer.
func encodeTime(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func decodeTime(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encodeID stores the usual 32-hex-digit EventID as 16 bytes and any other
// ID as text; the two never collide because SQLite compares blobs and text
// as different values.
func encodeID(id string) any {
	if len(id) != 32 {
		return id
	}
	// Lower-case hex digits only: what decodeID gives back.
	for i := range len(id) {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return id
		}
	}
	b, _ := hex.DecodeString(id) // hex digits: cannot fail
	return b
}

// keyOf returns the 64-bit lookup key of an encoded ID or a body hash:
// the first 8 bytes of the (already random) hash, or of the SHA-256 of a
// text ID. The indexes hold these keys rather than the whole IDs, which
// makes them 2–3 times smaller; a lookup compares the whole value.
func keyOf(v any) int64 {
	var b []byte
	switch v := v.(type) {
	case []byte:
		b = v
	case string:
		sum := sha256.Sum256([]byte(v))
		b = sum[:]
	}
	if len(b) < 8 {
		b = append(make([]byte, 8-len(b)), b...)
	}
	return int64(binary.BigEndian.Uint64(b))
}

func decodeID(v any) string {
	switch v := v.(type) {
	case []byte:
		return hex.EncodeToString(v)
	case string:
		return v
	}
	return ""
}

// recordMeta holds the fields of a record that have no column: small JSON
// with short keys.
type recordMeta struct {
	Group     string `json:"g,omitempty"`
	Resource  string `json:"r,omitempty"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n,omitempty"`
	Version   string `json:"v,omitempty"`
	Kind      string `json:"k,omitempty"`
	UID       string `json:"u,omitempty"`
	RV        string `json:"rv,omitempty"`
	// Hash is kept here only for a record that names a hash without a body.
	Hash       string                  `json:"h,omitempty"`
	BaselineID string                  `json:"b,omitempty"`
	Gap        *event.Gap              `json:"gap,omitempty"`
	Coverage   *event.CoverageChange   `json:"cov,omitempty"`
	Baseline   *event.Baseline         `json:"bl,omitempty"`
	Checkpoint *event.Checkpoint       `json:"cp,omitempty"`
	Saved      *event.SavedRef         `json:"snap,omitempty"` // "snap": the name of the format
	Audit      *event.AuditCorrelation `json:"audit,omitempty"`
	Inferred   *event.InferredDeletion `json:"inf,omitempty"`
}

// metaOf encodes the meta column of a record (schema version 4): the
// compact binary form (metaBinary) when the record is an object change
// whose only fields without a column are its version, kind, UID and
// resourceVersion — nearly every event — and JSON with short keys
// otherwise. The BaselineID has a column of its own (baseline) and is in
// neither.
func metaOf(r *event.Record, hasObj bool) ([]byte, error) {
	m := recordMeta{
		Version: r.Resource.Version, Kind: r.Resource.Kind, UID: r.Resource.UID, RV: r.Resource.ResourceVersion,
		Gap: r.Gap, Coverage: r.Coverage, Baseline: r.Baseline, Checkpoint: r.Checkpoint,
		Saved: r.Saved, Audit: r.Audit, Inferred: r.Inferred,
	}
	if !hasObj {
		m.Group, m.Resource, m.Namespace, m.Name = r.Resource.Group, r.Resource.Resource, r.Resource.Namespace, r.Resource.Name
	}
	if len(r.Object) == 0 {
		m.Hash = r.ObjectHash
	}
	if hasObj && m == (recordMeta{Version: m.Version, Kind: m.Kind, UID: m.UID, RV: m.RV}) {
		return appendBinaryMeta(make([]byte, 0, 48), &m), nil
	}
	return json.Marshal(&m)
}

// The binary meta form: the byte metaBinary, a flags byte, then the
// version and kind (each a uvarint length and the bytes), the UID (16
// bytes when flagUUID, else length and bytes) and the resourceVersion
// (a uvarint when flagDecimalRV, else length and bytes). JSON meta starts
// with '{', so the first byte tells the forms apart.
const (
	metaBinary    = 0x01
	flagUUID      = 1 << 0
	flagDecimalRV = 1 << 1
)

func appendBinaryMeta(out []byte, m *recordMeta) []byte {
	uid, isUUID := parseUUID(m.UID)
	rv, isDecimal := parseDecimal(m.RV)
	var flags byte
	if isUUID {
		flags |= flagUUID
	}
	if isDecimal {
		flags |= flagDecimalRV
	}
	out = append(out, metaBinary, flags)
	out = appendString(out, m.Version)
	out = appendString(out, m.Kind)
	if isUUID {
		out = append(out, uid[:]...)
	} else {
		out = appendString(out, m.UID)
	}
	if isDecimal {
		return binary.AppendUvarint(out, rv)
	}
	return appendString(out, m.RV)
}

func appendString(out []byte, s string) []byte {
	out = binary.AppendUvarint(out, uint64(len(s)))
	return append(out, s...)
}

// parseUUID returns the 16 bytes of a UUID in its canonical form
// (lowercase hex, 8-4-4-4-12), which formatUUID gives back exactly.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	hexDigits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(hexDigits)); err != nil || formatUUID(u) != s {
		return u, false
	}
	return u, true
}

func formatUUID(u [16]byte) string {
	var buf [36]byte
	return string(appendUUID(buf[:0], u))
}

// appendUUID appends the canonical text of a UUID (8-4-4-4-12 lower-case
// hex digits) to b.
func appendUUID(b []byte, u [16]byte) []byte {
	for i, part := range [][]byte{u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]} {
		if i > 0 {
			b = append(b, '-')
		}
		b = hex.AppendEncode(b, part)
	}
	return b
}

// parseDecimal returns a resourceVersion that is a canonical decimal
// number (no sign, no leading zero), which strconv.FormatUint gives back
// exactly.
func parseDecimal(s string) (uint64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// decodeMeta reads the meta column in either form into m. The strings m
// holds before, those of the row before, are kept where the row has the
// same: the rows of a query mostly share a version and kind, and an
// object's rows its UID.
func decodeMeta(data []byte, m *recordMeta) error {
	prev := *m
	*m = recordMeta{}
	if len(data) == 0 || data[0] != metaBinary {
		return json.Unmarshal(data, m)
	}
	if len(data) < 2 {
		return errors.New("short binary meta")
	}
	flags, rest := data[1], data[2:]
	var err error
	if m.Version, rest, err = readString(rest, prev.Version); err != nil {
		return err
	}
	if m.Kind, rest, err = readString(rest, prev.Kind); err != nil {
		return err
	}
	if flags&flagUUID != 0 {
		if len(rest) < 16 {
			return errors.New("binary meta: short UID")
		}
		var buf [36]byte
		if u := appendUUID(buf[:0], [16]byte(rest[:16])); string(u) == prev.UID {
			m.UID = prev.UID
		} else {
			m.UID = string(u)
		}
		rest = rest[16:]
	} else if m.UID, rest, err = readString(rest, prev.UID); err != nil {
		return err
	}
	if flags&flagDecimalRV != 0 {
		rv, n := binary.Uvarint(rest)
		if n <= 0 {
			return errors.New("binary meta: bad resourceVersion")
		}
		m.RV, rest = strconv.FormatUint(rv, 10), rest[n:]
	} else if m.RV, rest, err = readString(rest, ""); err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("binary meta: %d bytes left over", len(rest))
	}
	return nil
}

// readString reads a string; prev when it is the same.
func readString(b []byte, prev string) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, errors.New("binary meta: bad string")
	}
	if v := b[k : k+int(n)]; string(v) != prev {
		return string(v), b[k+int(n):], nil
	}
	return prev, b[k+int(n):], nil
}

func (m *recordMeta) applyTo(r *event.Record) {
	if m.Group != "" || m.Resource != "" || m.Namespace != "" || m.Name != "" {
		r.Resource.Group, r.Resource.Resource, r.Resource.Namespace, r.Resource.Name = m.Group, m.Resource, m.Namespace, m.Name
	}
	r.Resource.Version, r.Resource.Kind, r.Resource.UID, r.Resource.ResourceVersion = m.Version, m.Kind, m.UID, m.RV
	if m.Hash != "" {
		r.ObjectHash = m.Hash
	}
	r.BaselineID = m.BaselineID
	r.Gap, r.Coverage, r.Baseline, r.Checkpoint = m.Gap, m.Coverage, m.Baseline, m.Checkpoint
	r.Saved, r.Audit, r.Inferred = m.Saved, m.Audit, m.Inferred
}
