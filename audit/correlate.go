package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/go-logr/logr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Sentinel errors of matching.
var (
	// ErrNoMatch: the request could have changed an object, but no journal
	// event matches it.
	ErrNoMatch = errors.New("audit: no matching journal event")
	// ErrNotAChange: the event cannot have caused a journal event: a
	// read-only verb, a stage other than ResponseComplete, a failed or
	// dry-run request, a request about no stored object, or a write that
	// changed nothing.
	ErrNotAChange = errors.New("audit: request changed nothing")
)

// The rules a correlation can name in event.AuditCorrelation.Rule.
const (
	// RuleExactResourceVersion: the response object's resourceVersion (with
	// the object's cluster, group, resource, namespace, name and uid) is
	// the resourceVersion of the journal event. Confidence 1.
	RuleExactResourceVersion = "exact-resource-version"
	// RuleExactUIDDeletion: a delete whose response names the object's uid
	// (a Status, as most resources return, or the deleted object) matches
	// the DELETED event of that uid; an object is deleted once. Confidence 1.
	RuleExactUIDDeletion = "exact-uid-deletion"
	// RuleInferredDeletion: as RuleExactUIDDeletion, but the journal only
	// inferred the deletion (the object was absent from a relist after a
	// gap). Confidence 0.9.
	RuleInferredDeletion = "inferred-deletion-uid"
	// RuleSeenThroughRelist: as RuleExactResourceVersion, but the journal
	// knows the version only from a synthetic record — a baseline item (a
	// relist after a gap, or the initial list) or an inferred deletion: the
	// write happened while no watch recorded the object. The link names
	// the right version; the journal has no record of the write itself.
	// Confidence 0.9, never exact.
	RuleSeenThroughRelist = "seen-through-relist"
	// RuleNearestFollowing: the audit event carries no response body; the
	// match is the nearest following journal event of the same object in
	// the request's time window. Confidence 0.8 when it is the only event
	// following the request, 0.5 otherwise (see the package doc).
	RuleNearestFollowing = "nearest-following-event"
)

// Confidences of the rules.
const (
	ConfidenceExact             = 1.0
	ConfidenceInferredDeletion  = 0.9
	ConfidenceSeenThroughRelist = 0.9
	ConfidenceSoleCandidate     = 0.8
	ConfidenceAmbiguous         = 0.5
)

// Option configures a Correlator.
type Option interface {
	apply(*config)
}

type config struct {
	logger      logr.Logger
	hasLogger   bool
	clockSkew   time.Duration
	window      time.Duration
	batchSize   int
	maxProblems int
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Defaults of the options.
const (
	DefaultClockSkew   = time.Second
	DefaultMatchWindow = 30 * time.Second
	DefaultBatchSize   = 256
	DefaultMaxProblems = 100
)

// WithLogger sets the logger (default: the logger of each call's context,
// or none).
func WithLogger(l logr.Logger) Option {
	return optionFunc(func(c *config) { c.logger, c.hasLogger = l, true })
}

// WithClockSkew sets how far the journal's ObservedAt (the collector's
// clock) may run behind the audit timestamps (the API server's clock)
// (default DefaultClockSkew). A journal event observed earlier than
// requestReceivedTimestamp minus this skew was not caused by the request.
func WithClockSkew(d time.Duration) Option {
	return optionFunc(func(c *config) { c.clockSkew = d })
}

// WithMatchWindow sets how long after an audit event's stageTimestamp the
// journal event it caused may have been observed, for the best-effort rule
// (default DefaultMatchWindow).
func WithMatchWindow(d time.Duration) Option {
	return optionFunc(func(c *config) { c.window = d })
}

// WithBatchSize sets how many audit events Ingest matches together and how
// many correlation records it appends at once (default DefaultBatchSize).
func WithBatchSize(n int) Option {
	return optionFunc(func(c *config) { c.batchSize = n })
}

// WithMaxProblems caps how many line errors a Summary lists in Problems
// (default DefaultMaxProblems); Malformed counts all of them.
func WithMaxProblems(n int) Option {
	return optionFunc(func(c *config) { c.maxProblems = n })
}

// Correlator links audit events to the journal events they caused and
// records the links as audit_correlation records.
//
// A Correlator is safe for concurrent use; it holds no state between calls.
type Correlator struct {
	journal storage.ReadWriter
	cluster string
	cfg     config
}

// NewCorrelator returns a Correlator of the journal of one cluster:
// clusterID is the ClusterID the collector wrote the cluster's records
// with, the cluster whose API server wrote the audit events. The caller
// keeps j and closes it. Match only reads; Ingest appends correlation
// records, and on a journal opened read-only it returns an error wrapping
// storage.ErrReadOnly.
func NewCorrelator(j storage.ReadWriter, clusterID string, opts ...Option) (*Correlator, error) {
	if j == nil {
		return nil, fmt.Errorf("audit: %w: nil journal", ErrInvalidArgument)
	}
	if clusterID == "" {
		return nil, fmt.Errorf("audit: %w: empty cluster ID", ErrInvalidArgument)
	}
	cfg := config{clockSkew: DefaultClockSkew, window: DefaultMatchWindow, batchSize: DefaultBatchSize, maxProblems: DefaultMaxProblems}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	switch {
	case cfg.clockSkew < 0:
		return nil, fmt.Errorf("audit: %w: clock skew %s, want >= 0", ErrInvalidArgument, cfg.clockSkew)
	case cfg.window < 0:
		return nil, fmt.Errorf("audit: %w: match window %s, want >= 0", ErrInvalidArgument, cfg.window)
	case cfg.batchSize <= 0:
		return nil, fmt.Errorf("audit: %w: batch size %d, want > 0", ErrInvalidArgument, cfg.batchSize)
	case cfg.maxProblems < 0:
		return nil, fmt.Errorf("audit: %w: max problems %d, want >= 0", ErrInvalidArgument, cfg.maxProblems)
	}
	return &Correlator{journal: j, cluster: clusterID, cfg: cfg}, nil
}

// Summary reports what Ingest did. Every event read lands in exactly one
// of Exact, Scored, Unmatched or a Skipped count; every line that was not
// an event lands in Malformed.
type Summary struct {
	// Events counts the well-formed audit events read.
	Events int `json:"events"`
	// Exact counts events matched by an exact rule (confidence 1).
	Exact int `json:"exact"`
	// Scored counts events matched by a rule with confidence < 1.
	Scored int `json:"scored"`
	// SeenThroughRelist counts the Scored events matched to a synthetic
	// record (RuleSeenThroughRelist, RuleInferredDeletion): the write
	// happened while no watch recorded the object, and the journal shows
	// its result only as a baseline item or an inferred deletion.
	SeenThroughRelist int `json:"seenThroughRelist"`
	// Unmatched counts successful writes no journal event matched: the
	// journal does not cover the object, or the best-effort rule found no
	// candidate.
	Unmatched int `json:"unmatched"`
	// Malformed counts lines (or EventList items) that were not usable
	// audit events, including oversized ones.
	Malformed int `json:"malformed"`
	// SkippedReadOnly counts get, list, watch and other non-write verbs.
	SkippedReadOnly int `json:"skippedReadOnly"`
	// SkippedIncomplete counts events of a stage other than
	// ResponseComplete (the same request has a ResponseComplete event when
	// the policy logs that stage).
	SkippedIncomplete int `json:"skippedIncomplete"`
	// SkippedFailed counts writes that failed (a non-2xx status or a panic).
	SkippedFailed int `json:"skippedFailed"`
	// SkippedDryRun counts dry-run writes.
	SkippedDryRun int `json:"skippedDryRun"`
	// SkippedNoObject counts writes that store no object: non-resource
	// requests, reviews (tokenreviews, subjectaccessreviews, …) and
	// connect subresources (exec, attach, portforward, proxy, log, token).
	SkippedNoObject int `json:"skippedNoObject"`
	// SkippedNoChange counts writes whose response resourceVersion was
	// already recorded before the request: a no-op update or patch.
	SkippedNoChange int `json:"skippedNoChange"`
	// Recorded counts the audit_correlation records stored by this call,
	// Duplicates those that were stored already (the same event ingested
	// before).
	Recorded   int `json:"recorded"`
	Duplicates int `json:"duplicates"`
	// Problems lists the first line errors (WithMaxProblems), in order.
	Problems []LineError `json:"problems,omitempty"`
}

// outcome is how one audit event was classified.
type outcome int

const (
	outcomeExact outcome = iota
	outcomeScored
	outcomeUnmatched
	outcomeReadOnly
	outcomeIncomplete
	outcomeFailed
	outcomeDryRun
	outcomeNoObject
	outcomeNoChange
	outcomeThroughRelist
	outcomeBestEffort // not final: the best-effort pass decides
)

func (o outcome) String() string {
	switch o {
	case outcomeReadOnly:
		return "read-only verb"
	case outcomeIncomplete:
		return "stage is not ResponseComplete"
	case outcomeFailed:
		return "request failed"
	case outcomeDryRun:
		return "dry run"
	case outcomeNoObject:
		return "no stored object"
	case outcomeNoChange:
		return "response resourceVersion recorded before the request (no-op write)"
	}
	return "unmatched"
}

func (s *Summary) count(o outcome) {
	switch o {
	case outcomeExact:
		s.Exact++
	case outcomeScored:
		s.Scored++
	case outcomeThroughRelist:
		s.Scored++
		s.SeenThroughRelist++
	case outcomeUnmatched:
		s.Unmatched++
	case outcomeReadOnly:
		s.SkippedReadOnly++
	case outcomeIncomplete:
		s.SkippedIncomplete++
	case outcomeFailed:
		s.SkippedFailed++
	case outcomeDryRun:
		s.SkippedDryRun++
	case outcomeNoObject:
		s.SkippedNoObject++
	case outcomeNoChange:
		s.SkippedNoChange++
	}
}

// correlation is one link of an audit event to a journal event.
type correlation struct {
	target     event.Record
	confidence float64
	rule       string
}

// Match returns the EventID of the journal event evt caused, without
// recording anything: a real watch event, or, for a write the journal knows
// only from a relist (RuleSeenThroughRelist, RuleInferredDeletion), the
// synthetic record that shows its result. For a deletecollection that
// removed several objects it returns the first. Errors: ErrNoMatch (wrapped) when nothing matches,
// ErrNotAChange (wrapped) when evt cannot have caused a journal event.
func (c *Correlator) Match(ctx context.Context, evt Event) (string, error) {
	o, found, err := c.matchExact(ctx, evt, nil)
	if err != nil {
		return "", err
	}
	if o == outcomeBestEffort {
		o, found, err = c.matchBestEffort(ctx, evt, nil)
		if err != nil {
			return "", err
		}
	}
	switch o {
	case outcomeExact, outcomeScored, outcomeThroughRelist:
		return found[0].target.EventID, nil
	case outcomeUnmatched:
		return "", fmt.Errorf("%w: audit event %s (%s %s)", ErrNoMatch, evt.AuditID, evt.Verb, evt.RequestURI)
	}
	return "", fmt.Errorf("%w: audit event %s (%s %s): %s", ErrNotAChange, evt.AuditID, evt.Verb, evt.RequestURI, o)
}

// Ingest reads src to its end, matches every event and appends one
// audit_correlation record per match. Ingesting the same events again
// stores nothing new: a record's EventID is derived from the audit ID and
// the target event.
//
// Malformed lines are counted and listed in the Summary, never fatal. Ingest
// stops at the first fatal error (of src; of the journal, such as
// storage.ErrReadOnly from one opened read-only; or of ctx), after
// recording the matches of the events read before it, and returns the
// Summary so far with the error.
func (c *Correlator) Ingest(ctx context.Context, src Source) (Summary, error) {
	return c.ingest(ctx, src, nil)
}

// ingest is Ingest; when unmatched is not nil, the events counted as
// Unmatched are appended to it.
func (c *Correlator) ingest(ctx context.Context, src Source, unmatched *[]Event) (Summary, error) {
	var sum Summary
	batch := make([]Event, 0, c.cfg.batchSize)
	for {
		evt, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		var lineErr *LineError
		if errors.As(err, &lineErr) {
			sum.Malformed++
			if len(sum.Problems) < c.cfg.maxProblems {
				sum.Problems = append(sum.Problems, *lineErr)
			}
			c.logger(ctx).V(1).Info("skipping malformed audit line", "source", lineErr.Source, "line", lineErr.Line, "error", lineErr.Err)
			continue
		}
		if err != nil {
			if ferr := c.ingestBatch(ctx, batch, &sum, unmatched); ferr != nil {
				return sum, errors.Join(err, ferr)
			}
			return sum, err
		}
		sum.Events++
		batch = append(batch, evt)
		if len(batch) == cap(batch) {
			if err := c.ingestBatch(ctx, batch, &sum, unmatched); err != nil {
				return sum, err
			}
			batch = batch[:0]
		}
	}
	err := c.ingestBatch(ctx, batch, &sum, unmatched)
	return sum, err
}

func (c *Correlator) logger(ctx context.Context) logr.Logger {
	if c.cfg.hasLogger {
		return c.cfg.logger
	}
	return logr.FromContextOrDiscard(ctx)
}

// ingestBatch matches a batch, exact rules first so that the best-effort
// rule does not hand an event already explained by another request to a
// second one, and appends the records.
func (c *Correlator) ingestBatch(ctx context.Context, batch []Event, sum *Summary, unmatched *[]Event) error {
	if len(batch) == 0 {
		return nil
	}
	claims := map[string]string{} // target EventID → audit ID of a match by version
	outcomes := make([]outcome, len(batch))
	found := make([][]correlation, len(batch))
	for i, evt := range batch {
		o, corr, err := c.matchExact(ctx, evt, claims)
		if err != nil {
			return err
		}
		outcomes[i], found[i] = o, corr
		if o == outcomeExact || o == outcomeThroughRelist {
			for _, m := range corr {
				claims[m.target.EventID] = evt.AuditID
			}
		}
	}
	for i, evt := range batch {
		if outcomes[i] != outcomeBestEffort {
			continue
		}
		o, corr, err := c.matchBestEffort(ctx, evt, claims)
		if err != nil {
			return err
		}
		outcomes[i], found[i] = o, corr
	}
	var records []event.Record
	for i, evt := range batch {
		sum.count(outcomes[i])
		if outcomes[i] == outcomeUnmatched && unmatched != nil {
			*unmatched = append(*unmatched, evt)
		}
		for _, m := range found[i] {
			records = append(records, c.record(evt, m))
		}
	}
	if len(records) == 0 {
		return nil
	}
	res, err := c.journal.Append(ctx, records)
	if err != nil {
		return fmt.Errorf("audit: append %d correlations: %w", len(records), err)
	}
	sum.Recorded += res.Inserted
	sum.Duplicates += res.Duplicates
	return nil
}

// CorrelationID returns the EventID of the audit_correlation record that
// links the audit event auditID to the journal event target.
func CorrelationID(auditID string, target event.Record) string {
	return event.RecordID(event.TypeAuditCorrelation, target.Resource, auditID, target.EventID)
}

func (c *Correlator) record(evt Event, m correlation) event.Record {
	at := evt.StageTimestamp.Time
	if at.IsZero() {
		at = evt.RequestReceivedTimestamp.Time
	}
	return event.Record{
		Type:       event.TypeAuditCorrelation,
		EventID:    CorrelationID(evt.AuditID, m.target),
		ClusterID:  c.cluster,
		ObservedAt: at.UTC(),
		Resource:   m.target.Resource,
		Audit: &event.AuditCorrelation{
			TargetEventID:     m.target.EventID,
			AuditID:           evt.AuditID,
			User:              evt.User.Username,
			Groups:            evt.User.Groups,
			UserAgent:         evt.UserAgent,
			SourceIPs:         evt.SourceIPs,
			Verb:              evt.Verb,
			RequestURI:        evt.RequestURI,
			RequestReceivedAt: evt.RequestReceivedTimestamp.UTC(),
			Confidence:        m.confidence,
			Rule:              m.rule,
		},
	}
}

// writeVerbs are the verbs that can change a stored object.
var writeVerbs = map[string]bool{
	"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true,
}

// connectSubresources are subresources whose writes store nothing.
var connectSubresources = map[string]bool{
	"exec": true, "attach": true, "portforward": true, "proxy": true, "log": true, "token": true,
}

// responseMeta is what matching reads of a response object: an object's
// metadata, a Status's details, or a list's items.
type responseMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name              string  `json:"name"`
		Namespace         string  `json:"namespace"`
		UID               string  `json:"uid"`
		ResourceVersion   string  `json:"resourceVersion"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Details *struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"details"`
	Items []responseMeta `json:"items"`
}

// classify returns why evt cannot have caused a journal event, or
// outcomeBestEffort when it can.
func classify(evt Event) outcome {
	switch {
	case evt.Stage == StagePanic:
		return outcomeFailed
	case evt.Stage != StageResponseComplete:
		return outcomeIncomplete
	case !writeVerbs[evt.Verb]:
		return outcomeReadOnly
	case evt.ResponseStatus != nil && evt.ResponseStatus.Code != 0 && (evt.ResponseStatus.Code < 200 || evt.ResponseStatus.Code > 299):
		return outcomeFailed
	case evt.ObjectRef == nil || evt.ObjectRef.Resource == "" || connectSubresources[evt.ObjectRef.Subresource]:
		return outcomeNoObject
	case isDryRun(evt.RequestURI):
		return outcomeDryRun
	}
	return outcomeBestEffort
}

func isDryRun(requestURI string) bool {
	u, err := url.ParseRequestURI(requestURI)
	if err != nil {
		return false
	}
	_, ok := u.Query()["dryRun"]
	return ok
}

// isDeletion reports whether evt deletes (or begins deleting) objects.
func isDeletion(evt Event) bool {
	return evt.Verb == "delete" || evt.Verb == "deletecollection" ||
		(evt.ObjectRef != nil && evt.ObjectRef.Subresource == "eviction")
}

func (c *Correlator) objectID(evt Event, namespace, name string) storage.ObjectID {
	if namespace == "" {
		namespace = evt.ObjectRef.Namespace
	}
	if name == "" || evt.ObjectRef.Subresource != "" {
		name = evt.ObjectRef.Name
	}
	return storage.ObjectID{ClusterID: c.cluster, Group: evt.ObjectRef.APIGroup, Resource: evt.ObjectRef.Resource, Namespace: namespace, Name: name}
}

// notBefore is the earliest ObservedAt of a journal event evt may have
// caused.
func (c *Correlator) notBefore(evt Event) time.Time {
	return evt.RequestReceivedTimestamp.Add(-c.cfg.clockSkew)
}

// matchExact applies the exact rules. It returns outcomeBestEffort when
// evt carries no response body the exact rules can use.
func (c *Correlator) matchExact(ctx context.Context, evt Event, claims map[string]string) (outcome, []correlation, error) {
	if o := classify(evt); o != outcomeBestEffort {
		return o, nil, nil
	}
	if len(evt.ResponseObject) == 0 {
		return outcomeBestEffort, nil, nil
	}
	var resp responseMeta
	if err := json.Unmarshal(evt.ResponseObject, &resp); err != nil {
		// A body that is not an object (a subresource's plain output):
		// nothing exact to go on.
		return outcomeBestEffort, nil, nil
	}
	switch {
	case resp.Kind == "Status":
		if resp.Details == nil || resp.Details.UID == "" || !isDeletion(evt) {
			return outcomeBestEffort, nil, nil
		}
		m, err := c.deletionOf(ctx, c.objectID(evt, "", resp.Details.Name), resp.Details.UID, c.notBefore(evt))
		if err != nil || m == nil {
			return outcomeUnmatched, nil, err
		}
		return matched(*m)
	case evt.Verb == "deletecollection":
		var found []correlation
		for _, item := range resp.Items {
			if item.Metadata.UID == "" {
				continue
			}
			m, err := c.deletionOf(ctx, c.objectID(evt, item.Metadata.Namespace, item.Metadata.Name), item.Metadata.UID, c.notBefore(evt))
			if err != nil {
				return 0, nil, err
			}
			if m != nil {
				found = append(found, *m)
			}
		}
		if len(found) == 0 {
			return outcomeUnmatched, nil, nil
		}
		return matched(found...)
	case resp.Metadata.ResourceVersion == "":
		if evt.Verb == "create" && evt.ObjectRef.Subresource == "" {
			// A create whose result has no resourceVersion stored nothing
			// (tokenreviews, subjectaccessreviews, …).
			return outcomeNoObject, nil, nil
		}
		return outcomeBestEffort, nil, nil
	}

	obj := c.objectID(evt, resp.Metadata.Namespace, resp.Metadata.Name)
	if isDeletion(evt) && resp.Metadata.DeletionTimestamp == nil && resp.Metadata.UID != "" {
		// A delete answered with the deleted object: at the deletion's
		// resourceVersion (current API servers) or at the last version
		// before it (older ones), which is an earlier event's. The object
		// is gone either way, and a uid is deleted once.
		m, err := c.deletionOf(ctx, obj, resp.Metadata.UID, c.notBefore(evt))
		if err != nil || m == nil {
			return outcomeUnmatched, nil, err
		}
		return matched(*m)
	}
	// Everything else, including a delete that left the object
	// terminating (finalizers, graceful deletion): the response's
	// resourceVersion is that of the change the request made. The store
	// answers the real event with it, or else the first synthetic record
	// that shows it (never a later relist's copy, so that ingesting again
	// after another relist finds the same target).
	target, err := c.journal.EventByResourceVersion(ctx, obj, resp.Metadata.UID, resp.Metadata.ResourceVersion)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return outcomeUnmatched, nil, nil
	case err != nil:
		return 0, nil, fmt.Errorf("audit: match %s: %w", evt.AuditID, err)
	}
	if target.ObservedAt.Before(c.notBefore(evt)) {
		// The version existed before the request: an update or patch that
		// changed nothing returns the current object unchanged.
		return outcomeNoChange, nil, nil
	}
	if other, ok := claims[target.EventID]; ok && other != evt.AuditID {
		return outcomeNoChange, nil, nil
	}
	stored, err := c.journal.Correlations(ctx, []string{target.EventID})
	if err != nil {
		return 0, nil, fmt.Errorf("audit: correlations of %s: %w", target.EventID, err)
	}
	if claimedByOther(stored[target.EventID], evt.AuditID) {
		return outcomeNoChange, nil, nil
	}
	if target.Synthetic {
		return matched(correlation{target: target, confidence: ConfidenceSeenThroughRelist, rule: RuleSeenThroughRelist})
	}
	return matched(correlation{target: target, confidence: ConfidenceExact, rule: RuleExactResourceVersion})
}

// matched is the outcome of matches by the exact rules: exact, unless one
// of them is a synthetic record (the result seen through a relist).
func matched(found ...correlation) (outcome, []correlation, error) {
	for _, m := range found {
		if m.target.Synthetic {
			return outcomeThroughRelist, found, nil
		}
	}
	return outcomeExact, found, nil
}

// deletionOf finds the DELETED event of the object with the given uid
// observed at or after since, or returns nil.
func (c *Correlator) deletionOf(ctx context.Context, obj storage.ObjectID, uid string, since time.Time) (*correlation, error) {
	if obj.Name == "" {
		return nil, nil
	}
	history, err := c.journal.ObjectHistory(ctx, obj, storage.HistoryQuery{Since: since, WithoutBodies: true})
	if err != nil {
		return nil, fmt.Errorf("audit: history of %s/%s %s/%s: %w", obj.Group, obj.Resource, obj.Namespace, obj.Name, err)
	}
	for _, rec := range history {
		if rec.WatchType != event.Deleted || rec.Resource.UID != uid {
			continue
		}
		if rec.Synthetic {
			return &correlation{target: rec, confidence: ConfidenceInferredDeletion, rule: RuleInferredDeletion}, nil
		}
		return &correlation{target: rec, confidence: ConfidenceExact, rule: RuleExactUIDDeletion}, nil
	}
	return nil, nil
}

// compatible reports whether a watch event of type wt can be the result of
// evt.
func compatible(evt Event, wt event.WatchType) bool {
	switch {
	case isDeletion(evt):
		return wt == event.Deleted || wt == event.Modified // finalizers, graceful deletion
	case evt.ObjectRef.Subresource != "":
		return wt == event.Modified // status, scale, binding, …
	case evt.Verb == "create":
		return wt == event.Added
	default: // update, patch: MODIFIED, or ADDED when they create
		return wt == event.Modified || wt == event.Added
	}
}

// matchBestEffort applies RuleNearestFollowing.
func (c *Correlator) matchBestEffort(ctx context.Context, evt Event, claims map[string]string) (outcome, []correlation, error) {
	if o := classify(evt); o != outcomeBestEffort {
		return o, nil, nil
	}
	ref := evt.ObjectRef
	if ref.Name == "" || evt.Verb == "deletecollection" {
		return outcomeUnmatched, nil, nil
	}
	obj := c.objectID(evt, "", "")
	until := evt.StageTimestamp.Time
	if until.IsZero() {
		until = evt.RequestReceivedTimestamp.Time
	}
	history, err := c.journal.ObjectHistory(ctx, obj, storage.HistoryQuery{
		Since: c.notBefore(evt), Until: until.Add(c.cfg.window), WithoutBodies: true,
	})
	if err != nil {
		return 0, nil, fmt.Errorf("audit: history of %s/%s %s/%s: %w", obj.Group, obj.Resource, obj.Namespace, obj.Name, err)
	}
	var candidates []event.Record
	seen := map[[2]string]bool{} // the same change recorded by several streams
	for _, rec := range history {
		if rec.Synthetic || !compatible(evt, rec.WatchType) || (ref.UID != "" && rec.Resource.UID != ref.UID) {
			continue
		}
		if ref.ResourceVersion != "" && rec.Resource.ResourceVersion == ref.ResourceVersion {
			continue // the version the request started from (an update's precondition)
		}
		key := [2]string{rec.Resource.UID, rec.Resource.ResourceVersion}
		if seen[key] {
			continue
		}
		seen[key] = true
		if other, ok := claims[rec.EventID]; ok && other != evt.AuditID {
			continue
		}
		candidates = append(candidates, rec)
	}
	if len(candidates) > 0 {
		// Events that an exact rule gave to another request are not
		// candidates, whenever that request was ingested.
		ids := make([]string, len(candidates))
		for i, rec := range candidates {
			ids[i] = rec.EventID
		}
		stored, err := c.journal.Correlations(ctx, ids)
		if err != nil {
			return 0, nil, fmt.Errorf("audit: correlations of %s/%s %s/%s: %w", obj.Group, obj.Resource, obj.Namespace, obj.Name, err)
		}
		kept := candidates[:0]
		for _, rec := range candidates {
			if !claimedByOther(stored[rec.EventID], evt.AuditID) {
				kept = append(kept, rec)
			}
		}
		candidates = kept
	}
	if len(candidates) == 0 {
		return outcomeUnmatched, nil, nil
	}
	// The nearest following event: the first observed at or after the
	// request was received, sure when it is the only one; failing that,
	// the last one observed within the clock skew before it.
	var following []event.Record
	for _, rec := range candidates {
		if !rec.ObservedAt.Before(evt.RequestReceivedTimestamp.Time) {
			following = append(following, rec)
		}
	}
	chosen, confidence := candidates[len(candidates)-1], ConfidenceAmbiguous
	if len(following) > 0 {
		chosen = following[0]
		if len(following) == 1 {
			confidence = ConfidenceSoleCandidate
		}
	}
	return outcomeScored, []correlation{{target: chosen, confidence: confidence, rule: RuleNearestFollowing}}, nil
}

// claimedByOther reports whether another audit event was linked to the
// same journal record by an exact rule or by its version seen through a
// relist: a version is made by one write.
func claimedByOther(correlations []event.Record, auditID string) bool {
	for _, rec := range correlations {
		if rec.Audit != nil && rec.Audit.AuditID != auditID &&
			(rec.Audit.Confidence >= ConfidenceExact || rec.Audit.Rule == RuleSeenThroughRelist) {
			return true
		}
	}
	return false
}
