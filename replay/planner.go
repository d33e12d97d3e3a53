package replay

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"k8s.io/utils/clock"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// Journal record markers. Plans, dry-run reports and apply reports are
// TypePlan records told apart by Resource.Kind; Resource.Name is the plan ID.
const (
	recordGroup      = "krply.io"
	recordKindPlan   = "ReplayPlan"
	recordKindDryRun = "ReplayDryRun"
	recordKindApply  = "ReplayApply"
)

// DefaultMaxDryRunAge is how old the clean dry run Apply relies on may be.
const DefaultMaxDryRunAge = 24 * time.Hour

// Planner makes replay plans from a journal, saves them in it, dry-runs and
// applies them. Plan only reads; SavePlan, DryRun and Apply write to the
// journal. It is safe for concurrent use; it starts no goroutines and does
// not own the store (the caller closes it).
type Planner struct {
	store        storage.ReadWriter
	mat          *materialize.Materializer
	policy       Policy
	log          logr.Logger
	clock        clock.PassiveClock
	newID        func() string
	maxDryRunAge time.Duration
}

type plannerConfig struct {
	policy       Policy
	log          logr.Logger
	clock        clock.PassiveClock
	newID        func() string
	maxDryRunAge time.Duration
}

// Option configures a Planner.
type Option interface{ applyPlanner(*plannerConfig) }

type plannerOptionFunc func(*plannerConfig)

func (f plannerOptionFunc) applyPlanner(c *plannerConfig) { f(c) }

// WithPolicy sets the policy of the plans the Planner makes. The default is
// the zero Policy, the safe default.
func WithPolicy(p Policy) Option {
	return plannerOptionFunc(func(c *plannerConfig) { c.policy = p })
}

// WithClock sets the clock that stamps plans and reports. The default is the
// real clock.
func WithClock(clk clock.PassiveClock) Option {
	return plannerOptionFunc(func(c *plannerConfig) { c.clock = clk })
}

// WithIDGenerator sets the function that makes plan and report IDs. The
// default makes random UUIDs. IDs must be unique in the journal.
func WithIDGenerator(newID func() string) Option {
	return plannerOptionFunc(func(c *plannerConfig) { c.newID = newID })
}

// WithMaxDryRunAge sets how old the clean dry run that Apply relies on may
// be (DefaultMaxDryRunAge). Apply dry-runs again right before writing in any
// case; this bounds how long a reviewed result stays valid.
func WithMaxDryRunAge(d time.Duration) Option {
	return plannerOptionFunc(func(c *plannerConfig) { c.maxDryRunAge = d })
}

// LoggerOption is an option both NewPlanner and NewCluster take: it is an
// Option and a ClusterOption.
type LoggerOption interface {
	Option
	ClusterOption
}

type loggerOption struct{ log logr.Logger }

func (l loggerOption) applyPlanner(c *plannerConfig) { c.log = l.log }
func (l loggerOption) applyCluster(c *clusterConfig) { c.log = l.log }

// WithLogger sets the logger of a Planner or a Cluster. The default discards
// everything.
func WithLogger(log logr.Logger) LoggerOption { return loggerOption{log} }

// NewPlanner returns a Planner on store. Plan and LoadPlan only read, so a
// journal opened read-only answers them; SavePlan, DryRun and Apply save
// plans and reports, and on a read-only journal they return an error
// wrapping ErrReadOnly before Apply writes anything to a cluster. The
// caller keeps store and closes it. NewPlanner starts no goroutines and
// does no I/O.
func NewPlanner(store storage.ReadWriter, opts ...Option) (*Planner, error) {
	if store == nil {
		return nil, fmt.Errorf("replay: %w: nil store", ErrInvalidArgument)
	}
	cfg := plannerConfig{log: logr.Discard(), clock: clock.RealClock{}, newID: uuid.NewString, maxDryRunAge: DefaultMaxDryRunAge}
	for _, o := range opts {
		if o != nil {
			o.applyPlanner(&cfg)
		}
	}
	cfg.policy = clonePolicy(cfg.policy)
	if err := validatePolicy(cfg.policy); err != nil {
		return nil, err
	}
	switch {
	case cfg.clock == nil:
		return nil, fmt.Errorf("replay: %w: nil clock", ErrInvalidArgument)
	case cfg.newID == nil:
		return nil, fmt.Errorf("replay: %w: nil ID generator", ErrInvalidArgument)
	case cfg.maxDryRunAge <= 0:
		return nil, fmt.Errorf("replay: %w: max dry run age %s must be positive", ErrInvalidArgument, cfg.maxDryRunAge)
	}
	mat, err := materialize.New(store, materialize.WithLogger(cfg.log), materialize.WithClock(cfg.clock), materialize.WithIDGenerator(cfg.newID))
	if err != nil {
		return nil, fmt.Errorf("replay: materializer: %w", err)
	}
	return &Planner{store: store, mat: mat, policy: cfg.policy, log: cfg.log, clock: cfg.clock, newID: cfg.newID, maxDryRunAge: cfg.maxDryRunAge}, nil
}

func clonePolicy(p Policy) Policy {
	p.AllowFinalizers = slices.Clone(p.AllowFinalizers)
	p.Kinds = slices.Clone(p.Kinds)
	p.Names = slices.Clone(p.Names)
	p.StripPaths = slices.Clone(p.StripPaths)
	return p
}

// Plan materializes the source, refuses incomplete coverage unless the
// policy allows gaps (a *CoverageIncompleteError), sanitizes, maps and
// orders the objects. It only reads: the plan is a preview until SavePlan
// saves it, and DryRun and Apply accept only a saved plan.
func (p *Planner) Plan(ctx context.Context, src Source, tgt Target) (*Plan, error) {
	if src.SnapshotID == "" && (src.ClusterID == "" || src.At.IsZero()) {
		return nil, fmt.Errorf("replay: %w: source needs a snapshot ID, or a cluster ID and a time", ErrInvalidArgument)
	}
	for from, to := range tgt.Namespaces {
		if from == "" || to == "" {
			return nil, fmt.Errorf("replay: %w: empty namespace in target mapping %q -> %q", ErrInvalidArgument, from, to)
		}
	}
	for from, to := range tgt.Names {
		kind, name, ok := strings.Cut(from, "/")
		if !ok || kind == "" || name == "" || to == "" {
			return nil, fmt.Errorf("replay: %w: target name mapping %q -> %q: want \"Kind/name\" -> \"new-name\"", ErrInvalidArgument, from, to)
		}
	}

	snap, err := p.snapshot(ctx, src)
	if err != nil {
		return nil, err
	}
	if !snap.Complete && !p.policy.AllowGaps {
		return nil, &CoverageIncompleteError{ClusterID: snap.Scope.ClusterID, Missing: snap.Missing}
	}

	plan := &Plan{
		ID:        p.newID(),
		CreatedAt: p.clock.Now().UTC(),
		Source: Source{
			ClusterID:  snap.Scope.ClusterID,
			Namespaces: slices.Clone(snap.Scope.Namespaces),
			At:         snap.At.UTC(),
			SnapshotID: snap.ID,
		},
		Target:   cloneTarget(tgt),
		Policy:   clonePolicy(p.policy),
		Coverage: Coverage{Complete: snap.Complete, Watermarks: snap.Watermarks, Missing: snap.Missing},
		Status:   StatusPlanned,
	}
	b := builder{plan: plan, policy: plan.Policy, uncovered: uncoveredStreams(snap)}
	for _, so := range snap.Objects {
		b.add(so, false)
	}
	if err := p.addNamespaces(ctx, &b); err != nil {
		return nil, err
	}
	plan.SourceClusterUID = p.sourceClusterUID(ctx, plan.Source.ClusterID)
	if err := b.finish(snap); err != nil {
		return nil, err
	}
	if plan.Hash, err = plan.ComputeHash(); err != nil {
		return nil, err
	}
	p.log.V(1).Info("replay plan made (not saved)", "plan", plan.ID, "hash", plan.Hash, "objects", len(plan.Objects),
		"exclusions", len(plan.Exclusions), "complete", plan.Coverage.Complete)
	return plan, nil
}

// SavePlan saves a plan in the journal as a TypePlan record, so that it can
// be reviewed, loaded by another process (LoadPlan), dry-run and applied.
// Saving is an explicit act; Plan saves nothing. Saving the same plan again
// stores nothing new.
//
// It refuses a plan whose content no longer matches its hash
// (*StalePlanError) and a plan whose ID the journal already holds with
// other content (*UnsavedPlanError), and returns an error wrapping
// ErrReadOnly when the journal was opened read-only.
func (p *Planner) SavePlan(ctx context.Context, plan *Plan) error {
	if plan == nil {
		return fmt.Errorf("replay: %w: nil plan", ErrInvalidArgument)
	}
	if err := verifyHash(plan); err != nil {
		return err
	}
	// Status and LastDryRun are not part of the saved content: LoadPlan
	// derives them from the journal's dry-run and apply records.
	saved := *plan
	saved.Status, saved.LastDryRun = StatusPlanned, nil
	dup, err := p.save(ctx, savedDoc{kind: recordKindPlan, id: plan.ID, planID: plan.ID, clusterID: plan.Source.ClusterID,
		observedAt: p.clock.Now().UTC(), doc: &saved,
		ref: event.SavedRef{ID: plan.ID, Name: "replay plan", At: plan.Source.At, Complete: plan.Coverage.Complete}})
	if err != nil {
		return err
	}
	if dup {
		// The ID was taken: by this plan (nothing to do) or another record.
		if err := p.requireSaved(ctx, plan); err != nil {
			return err
		}
	}
	p.log.Info("replay plan saved", "plan", plan.ID, "hash", plan.Hash, "objects", len(plan.Objects),
		"exclusions", len(plan.Exclusions), "complete", plan.Coverage.Complete)
	return nil
}

// requireSaved refuses a plan the journal does not hold with the same ID
// and hash: a preview that was never saved, or a plan changed and hashed
// again after it was saved.
func (p *Planner) requireSaved(ctx context.Context, plan *Plan) error {
	refuse := func(reason string) error {
		return &UnsavedPlanError{PlanID: plan.ID, PlanHash: plan.Hash, Reason: reason}
	}
	rec, err := p.store.Get(ctx, plan.ID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return refuse("the journal holds no plan with this ID")
	case err != nil:
		return fmt.Errorf("replay: saved plan %s: %w", plan.ID, err)
	case rec.Type != event.TypePlan || rec.Resource.Group != recordGroup || rec.Resource.Kind != recordKindPlan:
		return refuse(fmt.Sprintf("the journal's record with this ID is a %s record, not a replay plan", rec.Type))
	}
	var head struct {
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal(rec.Object, &head); err != nil {
		return fmt.Errorf("%w: saved plan %s: %v", ErrInvalidPlan, plan.ID, err)
	}
	if head.Hash != plan.Hash {
		return refuse(fmt.Sprintf("the journal holds plan %s with hash %s", plan.ID, head.Hash))
	}
	return nil
}

func cloneTarget(t Target) Target {
	out := Target{ClusterID: t.ClusterID}
	if len(t.Namespaces) > 0 {
		out.Namespaces = make(map[string]string, len(t.Namespaces))
		for k, v := range t.Namespaces {
			out.Namespaces[k] = v
		}
	}
	if len(t.Names) > 0 {
		out.Names = make(map[string]string, len(t.Names))
		for k, v := range t.Names {
			out.Names[k] = v
		}
	}
	return out
}

func (p *Planner) snapshot(ctx context.Context, src Source) (*materialize.Snapshot, error) {
	if src.SnapshotID != "" {
		snap, err := p.mat.GetSnapshot(ctx, src.SnapshotID)
		if err != nil {
			return nil, fmt.Errorf("replay: source snapshot %s: %w", src.SnapshotID, err)
		}
		return snap, nil
	}
	scope := materialize.Scope{ClusterID: src.ClusterID, Namespaces: slices.Clone(src.Namespaces)}
	snap, err := p.mat.Snapshot(ctx, scope, src.At)
	if err != nil {
		return nil, fmt.Errorf("replay: snapshot of cluster %s at %s: %w", src.ClusterID, src.At.UTC().Format(time.RFC3339Nano), err)
	}
	return snap, nil
}

// uncoveredStreams maps each stream that was not covered at the snapshot's
// time to the reason.
func uncoveredStreams(snap *materialize.Snapshot) map[string]string {
	out := map[string]string{}
	for _, w := range snap.Watermarks {
		if !w.Covered {
			out[w.StreamID] = "not covered"
		}
	}
	for _, m := range snap.Missing {
		if m.StreamID != "" {
			out[m.StreamID] = m.Reason
		}
	}
	return out
}

// addNamespaces makes sure the plan creates every namespace it writes to:
// the recorded Namespace when the journal has it, a bare one otherwise.
func (p *Planner) addNamespaces(ctx context.Context, b *builder) error {
	plan := b.plan
	need := map[string]bool{} // source namespace -> needed
	for _, ns := range plan.Source.Namespaces {
		need[ns] = true
	}
	for _, o := range plan.Objects {
		if o.Source.Namespace != "" {
			need[o.Source.Namespace] = true
		}
	}
	have := map[string]bool{} // target namespaces the plan already creates
	for _, o := range plan.Objects {
		if o.Ref.Group == "" && o.Ref.Resource == "namespaces" {
			have[o.Ref.Name] = true
		}
	}
	names := make([]string, 0, len(need))
	for ns := range need {
		names = append(names, ns)
	}
	slices.Sort(names)
	for _, ns := range names {
		if have[targetNamespace(plan.Target, ns)] {
			continue
		}
		rec, err := p.store.LatestAt(ctx, storage.ObjectID{ClusterID: plan.Source.ClusterID, Resource: "namespaces", Name: ns}, plan.Source.At)
		switch {
		case err == nil && rec.WatchType != event.Deleted && len(rec.Object) > 0:
			// A Namespace the kind or name filters dropped is needed after all.
			b.plan.Exclusions = slices.DeleteFunc(b.plan.Exclusions, func(e Exclusion) bool {
				return e.Rule == RuleNotSelected && e.Ref.Group == "" && e.Ref.Resource == "namespaces" && e.Ref.Name == ns
			})
			b.add(materialize.SnapshotObject{Ref: rec.Resource, StreamID: rec.StreamID, EventID: rec.EventID,
				ObservedAt: rec.ObservedAt, Synthetic: rec.Synthetic, Object: rec.Object}, true)
		case err == nil || errors.Is(err, storage.ErrNotFound):
			b.synthesizeNamespace(ns)
		default:
			return fmt.Errorf("replay: namespace %s at source time: %w", ns, err)
		}
	}
	return nil
}

// sourceClusterUID returns the UID of the source cluster's kube-system
// namespace if the journal recorded it, "" otherwise.
func (p *Planner) sourceClusterUID(ctx context.Context, clusterID string) string {
	rec, err := p.store.LatestAt(ctx, storage.ObjectID{ClusterID: clusterID, Resource: "namespaces", Name: "kube-system"}, p.clock.Now())
	if err != nil {
		return ""
	}
	if rec.Resource.UID != "" {
		return rec.Resource.UID
	}
	body, err := decodeObject(rec.Object)
	if err != nil {
		return ""
	}
	uid, _ := nestedString(body, "metadata", "uid")
	return uid
}

// savedDoc is a plan, a dry-run report or an apply report to save in the
// journal as a TypePlan record.
type savedDoc struct {
	kind       string // recordKindPlan, recordKindDryRun or recordKindApply
	id         string // the plan's or the report's ID
	planID     string // the plan it is, or reports on
	clusterID  string // the source cluster of a plan, the target of a report
	observedAt time.Time
	ref        event.SavedRef // its listing: ID, what it is, its time, whether clean or complete
	doc        any            // saved as JSON in Record.Object
}

// eventID is a plan's ID, and for a report a hash of its kind, plan and ID.
func (d savedDoc) eventID() string {
	if d.kind == recordKindPlan {
		return d.id
	}
	return event.RecordID(event.TypePlan, event.ResourceRef{Group: recordGroup, Kind: d.kind, Name: d.planID}, d.id)
}

// save appends a plan, dry-run or apply record and reports whether the
// journal already held a record with that ID (and stored nothing).
func (p *Planner) save(ctx context.Context, d savedDoc) (bool, error) {
	id := d.eventID()
	raw, err := json.Marshal(d.doc)
	if err != nil {
		return false, fmt.Errorf("replay: encode %s %s: %w", d.kind, id, err)
	}
	ref := d.ref
	rec := event.Record{
		Type:       event.TypePlan,
		EventID:    id,
		ClusterID:  d.clusterID,
		ObservedAt: d.observedAt,
		Resource:   event.ResourceRef{Group: recordGroup, Kind: d.kind, Name: d.planID},
		ObjectHash: event.ObjectHash(raw),
		Object:     raw,
		Saved:      &ref,
	}
	res, err := p.store.Append(ctx, []event.Record{rec})
	if err != nil {
		return false, fmt.Errorf("replay: save %s %s: %w", d.kind, id, err)
	}
	return res.Duplicates > 0, nil
}

// IsPlanRecord reports whether rec is a saved plan (SavePlan), not one of
// the dry-run or apply reports kept beside it; its EventID is the plan's
// ID, for LoadPlan.
func IsPlanRecord(rec event.Record) bool {
	return rec.Type == event.TypePlan && rec.Resource.Group == recordGroup && rec.Resource.Kind == recordKindPlan
}

// LoadPlan returns a saved plan, with its content hash checked and its
// Status and LastDryRun brought up to date from the journal's dry-run and
// apply records.
func (p *Planner) LoadPlan(ctx context.Context, id string) (*Plan, error) {
	rec, err := p.store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("replay: load plan %s: %w", id, err)
	}
	if rec.Type != event.TypePlan || rec.Resource.Kind != recordKindPlan {
		return nil, fmt.Errorf("replay: load plan %s: the record with this ID is a %s record, not a replay plan: %w", id, rec.Type, ErrNotFound)
	}
	plan, err := ParsePlan(rec.Object)
	if err != nil {
		return nil, fmt.Errorf("replay: load plan %s: %w", id, err)
	}
	plan.Status, plan.LastDryRun = StatusPlanned, nil
	err = p.planRecords(ctx, plan, "", plan.CreatedAt, func(rec event.Record) (bool, error) {
		switch rec.Resource.Kind {
		case recordKindDryRun:
			var r DryRunReport
			if err := json.Unmarshal(rec.Object, &r); err != nil {
				return false, fmt.Errorf("replay: decode dry run %s: %w", rec.EventID, err)
			}
			if r.PlanHash != plan.Hash {
				return false, nil
			}
			if plan.LastDryRun == nil {
				plan.LastDryRun = &r
			}
			if plan.Status == StatusPlanned {
				plan.Status = r.Status
			}
		case recordKindApply:
			var r ApplyReport
			if err := json.Unmarshal(rec.Object, &r); err != nil {
				return false, fmt.Errorf("replay: decode apply report %s: %w", rec.EventID, err)
			}
			if r.PlanHash == plan.Hash && plan.Status == StatusPlanned {
				plan.Status = r.Status
			}
		}
		return plan.LastDryRun != nil && plan.Status != StatusPlanned, nil
	})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

// planRecords calls fn on the dry-run and apply records of a plan, newest
// first, observed at or after since in cluster clusterID ("" for any),
// until fn returns true.
func (p *Planner) planRecords(ctx context.Context, plan *Plan, clusterID string, since time.Time, fn func(event.Record) (bool, error)) error {
	q := storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypePlan}, Since: since, Descending: true, Limit: 200}
	for {
		page, err := p.store.Records(ctx, q)
		if err != nil {
			return fmt.Errorf("replay: records of plan %s: %w", plan.ID, err)
		}
		for _, rec := range page.Records {
			if rec.Resource.Group != recordGroup || rec.Resource.Name != plan.ID || rec.Resource.Kind == recordKindPlan {
				continue
			}
			stop, err := fn(rec)
			if err != nil || stop {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}

// builder accumulates a plan's objects and exclusions.
type builder struct {
	plan      *Plan
	policy    Policy
	uncovered map[string]string
}

func (b *builder) exclude(ref event.ResourceRef, rule ExclusionRule, reason string) {
	b.plan.Exclusions = append(b.plan.Exclusions, Exclusion{Ref: ref, Rule: rule, Reason: reason})
}

// add sanitizes, maps and annotates one recorded object, or excludes it.
// forced is set for the Namespaces the plan needs, which the kind and name
// filters never drop.
func (b *builder) add(so materialize.SnapshotObject, forced bool) {
	ref := so.Ref
	body, err := decodeObject(so.Object)
	if err != nil {
		b.exclude(ref, RuleUnknownKind, fmt.Sprintf("body is not a JSON object: %v", err))
		return
	}
	k := kindOf(ref)
	apiVersion, _ := nestedString(body, "apiVersion")
	if kind, _ := nestedString(body, "kind"); kind != "" {
		k.Kind = kind
	}
	if apiVersion == "" && ref.Version != "" {
		apiVersion = ref.Version
		if ref.Group != "" {
			apiVersion = ref.Group + "/" + ref.Version
		}
	}
	if k.Kind == "" || apiVersion == "" || k.Resource == "" {
		b.exclude(ref, RuleUnknownKind, "the recorded object has no apiVersion, kind or resource")
		return
	}
	isNamespace := k.is("", "namespaces")
	if len(b.plan.Source.Namespaces) > 0 && ref.Namespace == "" && !isNamespace {
		b.exclude(ref, RuleOutsideSource, "cluster-scoped, and the source names namespaces")
		return
	}
	if rule, reason, ok := excludedBy(b.policy, k, body); ok {
		b.exclude(ref, rule, reason)
		return
	}
	if ok, reason := selectedBy(b.policy, k); !ok && !forced {
		b.exclude(ref, RuleNotSelected, reason)
		return
	}

	removed := sanitize(b.policy, k, body)
	body["apiVersion"], body["kind"] = apiVersion, k.Kind
	md, _ := body["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		body["metadata"] = md
	}

	target := event.ResourceRef{Group: ref.Group, Version: ref.Version, Kind: k.Kind, Resource: ref.Resource, Name: ref.Name}
	if to, ok := b.plan.Target.Names[k.Kind+"/"+ref.Name]; ok && !isNamespace {
		target.Name = to
	}
	if isNamespace {
		target.Name = targetNamespace(b.plan.Target, ref.Name)
		// The API server keeps this label equal to the name; a renamed
		// namespace must carry the new value or every replay would
		// "change" it back.
		if labels, ok := md["labels"].(map[string]any); ok {
			if _, ok := labels["kubernetes.io/metadata.name"]; ok {
				labels["kubernetes.io/metadata.name"] = target.Name
			}
		}
	}
	if ref.Namespace != "" {
		target.Namespace = targetNamespace(b.plan.Target, ref.Namespace)
		md["namespace"] = target.Namespace
	}
	md["name"] = target.Name
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann[AnnotationSource] = sourceAnnotation(b.plan.Source.ClusterID, ref, false)

	raw, err := json.Marshal(body)
	if err != nil {
		b.exclude(ref, RuleUnknownKind, fmt.Sprintf("cannot encode the sanitized object: %v", err))
		return
	}
	obj := Object{Ref: target, Source: ref, SourceEventID: so.EventID, ObservedAt: so.ObservedAt.UTC(), Removed: removed, Object: raw}
	if reason, ok := b.uncovered[so.StreamID]; ok {
		obj.Warnings = append(obj.Warnings, fmt.Sprintf("recorded by stream %s, which was not covered at the source time (%s): this version may be stale, or the object may no longer have existed", so.StreamID, reason))
	}
	if b.policy.KeepOwnerReferences && md["ownerReferences"] != nil {
		obj.Warnings = append(obj.Warnings, "ownerReferences kept: they name owners by their UID in the source cluster")
	}
	b.plan.Objects = append(b.plan.Objects, obj)
}

// synthesizeNamespace adds a bare Namespace for a source namespace the
// journal has no record of.
func (b *builder) synthesizeNamespace(ns string) {
	name := targetNamespace(b.plan.Target, ns)
	source := event.ResourceRef{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: ns}
	body := map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":        name,
			"annotations": map[string]any{AnnotationSource: sourceAnnotation(b.plan.Source.ClusterID, source, true)},
		},
	}
	raw, _ := json.Marshal(body) // a map of strings always encodes
	b.plan.Objects = append(b.plan.Objects, Object{
		Ref:         event.ResourceRef{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: name},
		Source:      source,
		Synthesized: true,
		Warnings:    []string{fmt.Sprintf("the journal has no record of namespace %s at the source time; the plan creates a bare namespace %s", ns, name)},
		Object:      raw,
	})
}

// finish orders the objects and exclusions, rejects two objects with the
// same target, and adds the plan-wide warnings.
func (b *builder) finish(snap *materialize.Snapshot) error {
	plan := b.plan
	sortObjects(plan.Objects)
	slices.SortStableFunc(plan.Exclusions, func(a, c Exclusion) int {
		return cmp.Or(cmp.Compare(a.Ref.Group, c.Ref.Group), cmp.Compare(a.Ref.Resource, c.Ref.Resource),
			cmp.Compare(a.Ref.Namespace, c.Ref.Namespace), cmp.Compare(a.Ref.Name, c.Ref.Name))
	})
	for i := 1; i < len(plan.Objects); i++ {
		a, c := plan.Objects[i-1].Ref, plan.Objects[i].Ref
		if a.Group == c.Group && a.Resource == c.Resource && a.Namespace == c.Namespace && a.Name == c.Name {
			return fmt.Errorf("replay: %w: %s and %s both map to %s", ErrInvalidArgument, plan.Objects[i-1].Source, plan.Objects[i].Source, c)
		}
	}
	if !snap.Complete {
		plan.Warnings = append(plan.Warnings, "coverage is INCOMPLETE at the source time (allowed by Policy.AllowGaps): objects changed or deleted in a gap may be missing or stale")
		for _, m := range snap.Missing {
			what := m.StreamID
			if what == "" {
				what = m.Resource.String()
			}
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("not covered: %s: %s", what, m.Reason))
		}
	}
	plan.Warnings = append(plan.Warnings, snap.Warnings...)
	if len(plan.Target.Names) > 0 {
		plan.Warnings = append(plan.Warnings, "objects are renamed (Target.Names); references between objects are not rewritten")
	}
	return nil
}
