package truth

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Op is the kind of write that produced a Version.
type Op string

// The writes of a workload.
const (
	OpCreate Op = "create"
	OpUpdate Op = "update"
	OpDelete Op = "delete"
)

// WatchType is the watch event type a write of this kind produces.
func (o Op) WatchType() event.WatchType {
	switch o {
	case OpCreate:
		return event.Added
	case OpDelete:
		return event.Deleted
	}
	return event.Modified
}

// Version is one object version the server returned for a write.
type Version struct {
	// Seq is the version's position in the oracle's write order. The
	// workload writes one object at a time, so this is also the order in
	// which the server committed the versions.
	Seq    int
	Object storage.ObjectID
	Op     Op
	UID    string
	// ResourceVersion is the version's resourceVersion as the server
	// returned it. It is empty for a delete whose answer was a Status
	// rather than the object: the deletion's resourceVersion is then known
	// only from the watch.
	ResourceVersion string
	// Body is the object the server returned; for a delete, the deleted
	// state (the server's answer, or the version the delete was
	// preconditioned on).
	Body json.RawMessage
	// IssuedAt is just before the request was sent and RespondedAt just
	// after the answer arrived: the server committed the version between
	// the two.
	IssuedAt, RespondedAt time.Time
	// User is who made the write, and AuditID the ID of its request in
	// the API server's audit log (the client chose it, in the Audit-ID
	// header). Both are empty when the workload does not track them.
	User    string `json:",omitempty"`
	AuditID string `json:",omitempty"`
}

func (v Version) String() string {
	rv := v.ResourceVersion
	if rv == "" {
		rv = "?"
	}
	return fmt.Sprintf("#%d %s %s/%s/%s uid=%s rv=%s", v.Seq, v.Op, v.Object.Resource, v.Object.Namespace, v.Object.Name, short(v.UID), rv)
}

func short(uid string) string {
	if len(uid) > 8 {
		return uid[:8]
	}
	return uid
}

// Oracle is the ground truth of a workload: every version the server
// returned for each write, in write order, and the quiescent points at which
// the journal had caught up with the server. It is safe for concurrent use.
type Oracle struct {
	mu        sync.Mutex
	versions  []Version
	quiescent []time.Time
}

// Record adds a version, assigning its Seq. Times lose their monotonic
// reading, so they compare with the journal's wall-clock ObservedAt.
func (o *Oracle) Record(v Version) Version {
	o.mu.Lock()
	defer o.mu.Unlock()
	v.Seq = len(o.versions)
	v.IssuedAt, v.RespondedAt = v.IssuedAt.Round(0), v.RespondedAt.Round(0)
	o.versions = append(o.versions, v)
	return v
}

// Quiescent records a time at which no write was in flight and the journal
// had caught up with every write made before it.
func (o *Oracle) Quiescent(at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.quiescent = append(o.quiescent, at.Round(0))
}

// Versions returns every version, in write order.
func (o *Oracle) Versions() []Version {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.versions)
}

// QuiescentPoints returns the quiescent points, oldest first.
func (o *Oracle) QuiescentPoints() []time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.quiescent)
}

// Last returns the last version of obj, if any.
func (o *Oracle) Last(obj storage.ObjectID) (Version, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := len(o.versions) - 1; i >= 0; i-- {
		if o.versions[i].Object == obj {
			return o.versions[i], true
		}
	}
	return Version{}, false
}

// StateAt returns, for every object of the oracle, its last version that
// responded at or before at; a deleted object's is its delete. Only at a
// quiescent point is that exactly the server's state.
func (o *Oracle) StateAt(at time.Time) map[storage.ObjectID]Version {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[storage.ObjectID]Version{}
	for _, v := range o.versions {
		if !v.RespondedAt.After(at) {
			out[v.Object] = v
		}
	}
	return out
}

// oracleFile is an Oracle as saved by WriteFile.
type oracleFile struct {
	Versions  []Version   `json:"versions"`
	Quiescent []time.Time `json:"quiescent"`
}

// WriteFile saves the oracle as JSON, so a kept journal can be checked
// again (see ReadOracle).
func (o *Oracle) WriteFile(path string) error {
	o.mu.Lock()
	raw, err := json.Marshal(oracleFile{Versions: o.versions, Quiescent: o.quiescent})
	o.mu.Unlock()
	if err != nil {
		return fmt.Errorf("truth: encode oracle: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("truth: %w", err)
	}
	return nil
}

// ReadOracle reads an oracle saved by WriteFile.
func ReadOracle(path string) (*Oracle, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	var f oracleFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("truth: decode oracle %s: %w", path, err)
	}
	return &Oracle{versions: f.Versions, quiescent: f.Quiescent}, nil
}
