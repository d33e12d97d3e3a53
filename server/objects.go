package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// namespacesOf returns the namespaces to authorize for one object: its
// own, or cluster scope.
func namespacesOf(obj storage.ObjectID) []string {
	if obj.Namespace == "" {
		return nil
	}
	return []string{obj.Namespace}
}

// readObject reads and checks the parameters of one object: not a Secret,
// and the caller may read it.
func (h *handler) readObject(ctx context.Context, p *params, u *user) (storage.ObjectID, error) {
	obj, err := p.object(ctx)
	if err != nil {
		return obj, err
	}
	if isSecret(obj.Group, obj.Resource) {
		return obj, newError(http.StatusForbidden, CodeSecret, "resource", "Secrets are never served by the query API")
	}
	return obj, h.authorizeRead(ctx, u, namespacesOf(obj))
}

// endOfTime is after every time a journal holds.
var endOfTime = time.Unix(0, math.MaxInt64)

// recorded returns nil when the journal recorded obj, 404 otherwise. The
// routes ask it only when their answer holds no record of obj.
func (h *handler) recorded(ctx context.Context, obj storage.ObjectID) error {
	_, err := h.j.LatestAt(ctx, obj, endOfTime)
	if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	// Not recorded because a recording rule left it out is not "check
	// the name".
	if st, err := h.m.ObjectAt(ctx, obj, time.Now()); err == nil && st.ExcludedByRule != "" {
		return notFound("the journal never recorded %s %s (cluster %s): %s", obj.Resource, objectName(obj), obj.ClusterID, st.ExcludedByRule)
	}
	return notFound("the journal never recorded %s %s (cluster %s): check the resource (plural.group), namespace and name", obj.Resource, objectName(obj), obj.ClusterID)
}

func objectName(obj storage.ObjectID) string {
	if obj.Namespace == "" {
		return obj.Name
	}
	return obj.Namespace + "/" + obj.Name
}

func (h *handler) object(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	at, err := p.time("at", p.now)
	if err != nil {
		return 0, nil, err
	}
	obj, err := h.readObject(ctx, p, u)
	if err != nil {
		return 0, nil, err
	}
	st, err := h.m.ObjectAt(ctx, obj, at)
	if err != nil {
		return 0, nil, err
	}
	if st.Record == nil && st.ExcludedByRule == "" {
		if err := h.recorded(ctx, obj); err != nil {
			return 0, nil, err
		}
	}
	return http.StatusOK, st, nil
}

func (h *handler) history(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	var opts []materialize.HistoryOption
	if p.q.Has("since") {
		since, err := p.time("since", p.now)
		if err != nil {
			return 0, nil, err
		}
		opts = append(opts, materialize.Since(since))
	}
	if p.q.Has("until") {
		until, err := p.time("until", p.now)
		if err != nil {
			return 0, nil, err
		}
		opts = append(opts, materialize.Until(until))
	}
	if expr := p.q.Get("filter"); expr != "" {
		f, err := h.changeFilter(expr)
		if err != nil {
			return 0, nil, err
		}
		opts = append(opts, materialize.WithChangeFilter(f))
	}
	if p.q.Has("includeStatus") {
		status, err := p.boolean("includeStatus", true)
		if err != nil {
			return 0, nil, err
		}
		opts = append(opts, materialize.IncludeStatus(status))
	}
	limit, cur, err := p.pageOf(h.cfg.maxPage)
	if err != nil {
		return 0, nil, err
	}
	opts = append(opts, materialize.Limit(limit))
	if cur != nil {
		if cur.Key == "" {
			return 0, nil, notCursorOf("history")
		}
		opts = append(opts, materialize.After(cur.Key))
	}
	obj, err := h.readObject(ctx, p, u)
	if err != nil {
		return 0, nil, err
	}
	hist, err := h.m.History(ctx, obj, opts...)
	if cur != nil && errors.Is(err, ErrInvalidArgument) {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "%v", err)
	}
	if err != nil {
		return 0, nil, err
	}
	if len(hist.Versions()) == 0 {
		if err := h.recorded(ctx, obj); err != nil {
			return 0, nil, err
		}
	}
	if hist.Next != "" {
		// The library's Next (the last record read) becomes the API's
		// cursor, bound to the query's parameters.
		hist.Next = p.next(cursor{Key: hist.Next})
	}
	return http.StatusOK, hist, nil
}

// withoutSecrets drops the Secrets from a snapshot's objects and says so.
func withoutSecrets(snap *materialize.Snapshot) {
	kept := snap.Objects[:0]
	for _, o := range snap.Objects {
		if !isSecret(o.Ref.Group, o.Ref.Resource) {
			kept = append(kept, o)
		}
	}
	if n := len(snap.Objects) - len(kept); n > 0 {
		snap.Warnings = append(snap.Warnings, fmt.Sprintf("%d Secrets left out: the query API never serves Secrets", n))
	}
	snap.Objects = kept
}

// notCursorOf refuses a cursor made by another kind of query.
func notCursorOf(what string) error {
	return newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "the cursor is not one of a %s: give the next of a previous page of this %s", what, what)
}

func (h *handler) snapshot(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	scope, at, err := p.scopeAt(ctx)
	if err != nil {
		return 0, nil, err
	}
	limit, cur, whole, err := p.objectsPage()
	if err != nil {
		return 0, nil, err
	}
	var after *storage.ObjectID
	if cur != nil {
		if cur.Obj == nil || cur.At.IsZero() {
			return 0, nil, notCursorOf("snapshot")
		}
		at, after = cur.At, cur.Obj
	}
	if err := h.authorizeRead(ctx, u, scope.Namespaces); err != nil {
		return 0, nil, err
	}
	snap, err := h.m.SnapshotPage(ctx, scope, at, materialize.Page{After: after, Limit: limit})
	if err != nil {
		return 0, nil, err
	}
	if whole && snap.Next != nil {
		return 0, nil, p.tooManyObjects("snapshot")
	}
	withoutSecrets(snap)
	out := SnapshotPage{Snapshot: *snap}
	if snap.Next != nil {
		out.Next = p.next(cursor{Obj: snap.Next, At: at})
	}
	return http.StatusOK, out, nil
}

func (h *handler) listSnapshots(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	clusterID, limit, cur, err := p.clusterPage(ctx)
	if err != nil {
		return 0, nil, err
	}
	all, err := h.m.ListSnapshots(ctx, clusterID)
	if err != nil {
		return 0, nil, err
	}
	out := SnapshotList{Items: []materialize.Snapshot{}}
	start := 0
	if cur != nil {
		start = int(min(max(cur.Seq, 0), int64(len(all))))
	}
	for i := start; i < len(all); i++ {
		if len(out.Items) == limit {
			out.Next = p.next(cursor{Seq: int64(i)})
			break
		}
		// A snapshot the caller may not read is left out of the list.
		if err := h.authorizeRead(ctx, u, all[i].Scope.Namespaces); err != nil {
			if e := asError(err); e.Code == CodeForbidden {
				continue
			}
			return 0, nil, err
		}
		out.Items = append(out.Items, all[i])
	}
	return http.StatusOK, out, nil
}

func (h *handler) getSnapshot(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	limit, cur, whole, err := p.objectsPage()
	if err != nil {
		return 0, nil, err
	}
	snap, err := h.m.GetSnapshot(ctx, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if err := h.authorizeRead(ctx, u, snap.Scope.Namespaces); err != nil {
		return 0, nil, err
	}
	// The saved snapshot is one record: its objects are paged by offset.
	start := 0
	if cur != nil {
		start = int(min(max(cur.Seq, 0), int64(len(snap.Objects))))
	}
	next := ""
	snap.Objects = snap.Objects[start:]
	if len(snap.Objects) > limit {
		if whole {
			return 0, nil, p.tooManyObjects("saved snapshot")
		}
		snap.Objects = snap.Objects[:limit]
		next = p.next(cursor{Seq: int64(start + limit)})
	}
	withoutSecrets(snap)
	return http.StatusOK, SnapshotPage{Snapshot: *snap, Next: next}, nil
}

func (h *handler) saveSnapshot(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	if !h.cfg.writes {
		return 0, nil, readOnly("this server does not save snapshots: it is read-only (enable writes with WithWrites)")
	}
	p := h.params(r)
	limit, cur, whole, err := p.objectsPage()
	if err != nil {
		return 0, nil, err
	}
	if cur != nil {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "saving takes no cursor: read the pages after the first with GET %ssnapshots/{id}, the cursor of the answer's next", Prefix)
	}
	var req SnapshotRequest
	if err := h.decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Scope.ClusterID == "" {
		id, err := h.soleCluster(ctx)
		if err != nil {
			return 0, nil, err
		}
		req.Scope.ClusterID = id
	}
	at, err := ParseTime(req.At, h.cfg.clock.Now())
	if err != nil {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidBody, "at", "at: %v", err)
	}
	if err := h.auth.authorize(ctx, u, "create", ResourceHistory, req.Scope.Namespaces...); err != nil {
		return 0, nil, err
	}
	snap, err := h.m.Snapshot(ctx, req.Scope, at)
	if err != nil {
		return 0, nil, err
	}
	if whole && len(snap.Objects) > limit {
		// Refused before saving: a client written before pages asks
		// without limit, and would take a first page for the whole.
		return 0, nil, p.tooManyObjects("snapshot")
	}
	if err := h.m.SaveSnapshot(ctx, snap, req.Name); err != nil {
		return 0, nil, err
	}
	// The answer is the saved snapshot's first page, as GET
	// snapshots/{id} pages it (by offset, Secrets left out of each page);
	// its next continues there.
	out := SnapshotPage{Snapshot: *snap}
	if len(out.Objects) > limit {
		out.Objects = out.Objects[:limit]
		out.Next = p.next(cursor{Seq: int64(limit)})
	}
	withoutSecrets(&out.Snapshot)
	return http.StatusCreated, out, nil
}

func (h *handler) diff(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	scope, err := p.scope(ctx)
	if err != nil {
		return 0, nil, err
	}
	if !p.q.Has("from") {
		return 0, nil, badParam("from", "give from, the start of the diff (RFC 3339, or e.g. 1h ago)")
	}
	from, err := p.time("from", p.now)
	if err != nil {
		return 0, nil, err
	}
	to, err := p.time("to", p.now)
	if err != nil {
		return 0, nil, err
	}
	limit, cur, whole, err := p.objectsPage()
	if err != nil {
		return 0, nil, err
	}
	var after *storage.ObjectID
	if cur != nil {
		if cur.Obj == nil || cur.At.IsZero() || cur.To.IsZero() {
			return 0, nil, notCursorOf("diff")
		}
		from, to, after = cur.At, cur.To, cur.Obj
	}
	if err := p.checkRange("from", from, to); err != nil {
		return 0, nil, err
	}
	status, err := p.boolean("includeStatus", false)
	if err != nil {
		return 0, nil, err
	}
	if err := h.authorizeRead(ctx, u, scope.Namespaces); err != nil {
		return 0, nil, err
	}
	d, err := h.m.DiffPage(ctx, scope, from, to, materialize.Page{After: after, Limit: limit}, materialize.IncludeStatus(status))
	if err != nil {
		return 0, nil, err
	}
	if whole && d.Next != nil {
		return 0, nil, p.tooManyObjects("diff")
	}
	kept := d.Objects[:0]
	for _, o := range d.Objects {
		if !isSecret(o.ID.Group, o.ID.Resource) {
			kept = append(kept, o)
		}
	}
	if n := len(d.Objects) - len(kept); n > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d Secrets left out: the query API never serves Secrets", n))
	}
	d.Objects = kept
	out := DiffPage{Diff: *d}
	if d.Next != nil {
		out.Next = p.next(cursor{Obj: d.Next, At: from, To: to})
	}
	return http.StatusOK, out, nil
}
