package sqlite

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
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
	if len(id) == 32 {
		if b, err := hex.DecodeString(id); err == nil && hex.EncodeToString(b) == id {
			return b
		}
	}
	return id
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

func metaOf(r *event.Record, hasObj bool) ([]byte, error) {
	m := recordMeta{
		Version: r.Resource.Version, Kind: r.Resource.Kind, UID: r.Resource.UID, RV: r.Resource.ResourceVersion,
		BaselineID: r.BaselineID,
		Gap:        r.Gap, Coverage: r.Coverage, Baseline: r.Baseline, Checkpoint: r.Checkpoint,
		Saved: r.Saved, Audit: r.Audit, Inferred: r.Inferred,
	}
	if !hasObj {
		m.Group, m.Resource, m.Namespace, m.Name = r.Resource.Group, r.Resource.Resource, r.Resource.Namespace, r.Resource.Name
	}
	if len(r.Object) == 0 {
		m.Hash = r.ObjectHash
	}
	return json.Marshal(&m)
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
