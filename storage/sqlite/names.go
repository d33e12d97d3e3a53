package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The name tables of schema version 4 (clusters, scopes, baselines) hold
// what rows would otherwise repeat: each name once, under a row id that
// records and objects point at. Their rows are only ever inserted, never
// changed or deleted (a compaction leaves them), so a row id the writer
// has seen committed stays true for good, also when other processes
// write: the writer keeps them (names) and looks up or inserts, inside its
// transaction, only those it has not seen.

// scopeKey names a scope: the cluster (its row id), namespace, group and
// resource an object lives in.
type scopeKey struct {
	cluster                  int64
	namespace, grp, resource string
}

// names are the writer's committed name rows.
type names struct {
	clusters  map[string]int64
	scopes    map[scopeKey]int64
	baselines map[string]int64
	// knownScopes are scopes whose every objects row the writer knows, so
	// that an object of theirs it does not know is new and needs no
	// lookup: of a transaction, the scopes it created; of the Store,
	// those its committed transactions created, as long as all their
	// objects are in Store.objectIDs and no other process added objects
	// (see forgetScopes).
	knownScopes map[int64]bool
}

func newNames() names {
	return names{clusters: map[string]int64{}, scopes: map[scopeKey]int64{}, baselines: map[string]int64{}, knownScopes: map[int64]bool{}}
}

// publish adds the rows of a committed transaction, emptying a map that
// grew too large (baselines grow by one per list). objectsKept says that
// the Store's objectIDs kept every object it knew and gained the
// transaction's: only then are the transaction's new scopes known whole.
func (n names) publish(added names, objectsKept bool) {
	publishNames(n.clusters, added.clusters)
	publishNames(n.scopes, added.scopes)
	publishNames(n.baselines, added.baselines)
	if !objectsKept {
		n.forgetScopes()
		return
	}
	for scope := range added.knownScopes {
		n.knownScopes[scope] = true
	}
}

// forgetScopes forgets which scopes the writer knows whole: when it
// forgot objects, or another process may have added some.
func (n names) forgetScopes() { clear(n.knownScopes) }

func publishNames[K comparable](known, added map[K]int64) {
	if len(known)+len(added) > 1<<14 {
		clear(known)
	}
	for k, v := range added {
		known[k] = v
	}
}

// nameStmts find and insert the rows of the name tables.
type nameStmts struct {
	findCluster, insertCluster, findScope, insertScope, findBaseline, insertBaseline *sql.Stmt
}

func (ns *nameStmts) list() []**sql.Stmt {
	return []**sql.Stmt{&ns.findCluster, &ns.insertCluster, &ns.findScope, &ns.insertScope, &ns.findBaseline, &ns.insertBaseline}
}

var nameSQL = []string{
	`SELECT id FROM clusters WHERE name = ?`, `INSERT INTO clusters (name) VALUES (?)`,
	`SELECT id FROM scopes WHERE cluster = ? AND namespace = ? AND grp = ? AND resource = ?`,
	`INSERT INTO scopes (cluster, namespace, grp, resource) VALUES (?,?,?,?)`,
	`SELECT id FROM baselines WHERE baseline_id = ?`, `INSERT INTO baselines (baseline_id) VALUES (?)`,
}

func (ns *nameStmts) prepare(ctx context.Context, db *sql.DB) error {
	for i, p := range ns.list() {
		st, err := db.PrepareContext(ctx, nameSQL[i])
		if err != nil {
			ns.close()
			return fmt.Errorf("prepare %q: %w", nameSQL[i], err)
		}
		*p = st
	}
	return nil
}

func (ns *nameStmts) close() {
	for _, p := range ns.list() {
		if *p != nil {
			(*p).Close()
		}
	}
}

// nameRow returns the row id of a name (args are its columns), found in
// known or added or by find, or inserted by insert (and then added);
// inserted says it was inserted now.
func nameRow[K comparable](at *appendTx, key K, known, added map[K]int64, find, insert *sql.Stmt, args ...any) (id int64, inserted bool, err error) {
	if id, ok := known[key]; ok {
		return id, false, nil
	}
	if id, ok := added[key]; ok {
		return id, false, nil
	}
	err = at.tx.StmtContext(at.ctx, find).QueryRowContext(at.ctx, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		var res sql.Result
		if res, err = at.tx.StmtContext(at.ctx, insert).ExecContext(at.ctx, args...); err == nil {
			id, err = res.LastInsertId()
			inserted = true
		}
	}
	if err != nil {
		return 0, false, err
	}
	added[key] = id
	return id, inserted, nil
}

// clusterRow returns the row id of a cluster ID.
func (at *appendTx) clusterRow(cluster string) (int64, error) {
	id, _, err := nameRow(at, cluster, at.s.names.clusters, at.names.clusters, at.s.nameStmts.findCluster, at.s.nameStmts.insertCluster, cluster)
	if err != nil {
		return 0, fmt.Errorf("cluster %q: %w", cluster, err)
	}
	return id, nil
}

// scopeRow returns the row id of the scope of an object.
func (at *appendTx) scopeRow(cluster, namespace, grp, resource string) (int64, error) {
	c, err := at.clusterRow(cluster)
	if err != nil {
		return 0, err
	}
	key := scopeKey{c, namespace, grp, resource}
	id, inserted, err := nameRow(at, key, at.s.names.scopes, at.names.scopes, at.s.nameStmts.findScope, at.s.nameStmts.insertScope, c, namespace, grp, resource)
	if err != nil {
		return 0, fmt.Errorf("scope %s %s/%s %s: %w", cluster, grp, resource, namespace, err)
	}
	if inserted {
		// A new scope has no objects but those this transaction adds.
		at.names.knownScopes[id] = true
	}
	return id, nil
}

// knownScope reports whether the writer knows every object of a scope:
// an object of it that neither the transaction nor the Store knows is
// new.
func (at *appendTx) knownScope(scope int64) bool {
	return at.names.knownScopes[scope] || at.s.names.knownScopes[scope]
}

// baselineRow returns the row id of a baseline ID.
func (at *appendTx) baselineRow(baselineID string) (int64, error) {
	id, _, err := nameRow(at, baselineID, at.s.names.baselines, at.names.baselines, at.s.nameStmts.findBaseline, at.s.nameStmts.insertBaseline, baselineID)
	if err != nil {
		return 0, fmt.Errorf("baseline %q: %w", baselineID, err)
	}
	return id, nil
}
