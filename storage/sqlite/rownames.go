package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/krply/krply/event"
)

// rowNames resolves, for readers, the row ids a record row points at —
// its cluster, stream, scope and baseline — to their names. Read
// statements select the ids instead of joining the name tables: a join
// is a B-tree seek per row and per table, and a name column a string the
// driver allocates for every row, though a query's rows mostly share a
// handful of names. The name tables and streams are only ever inserted
// into (see names.go), so a row id read from a committed row names the
// same thing for good; a cache filled from the read pool stays true.
type rowNames struct {
	mu        sync.RWMutex
	clusters  map[int64]string
	streams   map[int64]string
	scopes    map[int64]scopeName
	baselines map[int64]string
}

// scopeName is a scope row by name.
type scopeName struct {
	cluster, namespace, grp, resource string
}

// maxRowNames bounds each map of rowNames; past it the map starts over
// (baselines grow by one per list).
const maxRowNames = 1 << 14

// queryer runs a query returning one row: the read pool, or the
// transaction of a compaction.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// nameLookups are the statements that read one name row by row id.
const (
	clusterByRow  = `SELECT name FROM clusters WHERE id = ?`
	streamByRow   = `SELECT stream_id FROM streams WHERE id = ?`
	scopeByRow    = `SELECT c.name, p.namespace, p.grp, p.resource FROM scopes p JOIN clusters c ON c.id = p.cluster WHERE p.id = ?`
	baselineByRow = `SELECT baseline_id FROM baselines WHERE id = ?`
)

// resolver resolves the ids of one call's rows: the last id of each kind
// is remembered without a lock (a call's rows mostly share them), the
// others come from the shared rowNames or, on a miss, from q. A nil
// shared cache (a compaction's transaction, whose new rows may yet roll
// back) reads every name it has not seen in this call.
type resolver struct {
	ctx    context.Context
	q      queryer
	shared *rowNames

	cluster  lastName[string]
	stream   lastName[string]
	scope    lastName[scopeName]
	baseline lastName[string]
}

type lastName[V any] struct {
	id    int64
	value V
}

// resolve sets the names of a scanned record's row ids (those not 0: the
// rows of one object have no cluster, scope and name columns).
func (r *resolver) resolve(rec *event.Record, rr *rowRefs) error {
	var err error
	if rr.cluster != 0 {
		if rec.ClusterID, err = resolveOne(r, &r.cluster, rr.cluster, clusterByRow, func(n *rowNames) *map[int64]string { return &n.clusters }); err != nil {
			return err
		}
	}
	if rr.stream != 0 {
		if rec.StreamID, err = resolveOne(r, &r.stream, rr.stream, streamByRow, func(n *rowNames) *map[int64]string { return &n.streams }); err != nil {
			return err
		}
	}
	if rr.baseline != 0 {
		if rec.BaselineID, err = resolveOne(r, &r.baseline, rr.baseline, baselineByRow, func(n *rowNames) *map[int64]string { return &n.baselines }); err != nil {
			return err
		}
	}
	if rr.scope != 0 {
		sc, err := resolveOne(r, &r.scope, rr.scope, scopeByRow, func(n *rowNames) *map[int64]scopeName { return &n.scopes })
		if err != nil {
			return err
		}
		rec.Resource.Group, rec.Resource.Resource, rec.Resource.Namespace = sc.grp, sc.resource, sc.namespace
	}
	return nil
}

// resolveOne returns the name of row id of one name table.
func resolveOne[V any](r *resolver, last *lastName[V], id int64, query string, table func(*rowNames) *map[int64]V) (V, error) {
	if id == last.id {
		return last.value, nil
	}
	var v V
	ok := false
	if r.shared != nil {
		r.shared.mu.RLock()
		v, ok = (*table(r.shared))[id]
		r.shared.mu.RUnlock()
	}
	if !ok {
		var err error
		if v, err = readName[V](r.ctx, r.q, query, id); err != nil {
			return v, err
		}
		if r.shared != nil {
			r.shared.mu.Lock()
			m := table(r.shared)
			if *m == nil || len(*m) >= maxRowNames {
				*m = map[int64]V{}
			}
			(*m)[id] = v
			r.shared.mu.Unlock()
		}
	}
	*last = lastName[V]{id: id, value: v}
	return v, nil
}

// readName reads the name row id with query.
func readName[V any](ctx context.Context, q queryer, query string, id int64) (V, error) {
	var v V
	var err error
	switch p := any(&v).(type) {
	case *string:
		err = q.QueryRowContext(ctx, query, id).Scan(p)
	case *scopeName:
		err = q.QueryRowContext(ctx, query, id).Scan(&p.cluster, &p.namespace, &p.grp, &p.resource)
	}
	if err != nil {
		return v, fmt.Errorf("name row %d (%s): %w", id, query, err)
	}
	return v, nil
}
