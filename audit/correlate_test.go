package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/readonly"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

const cluster = "c1"

var (
	cmStream     = event.Stream{ClusterID: cluster, Version: "v1", Resource: "configmaps"}
	deployStream = event.Stream{ClusterID: cluster, Group: "apps", Version: "v1", Resource: "deployments"}
	cmUID        = "5f0c3a8e-0b6e-4b7e-9a43-6f1f2a0c0001"
	deployUID    = "7d1e2f3a-0000-4000-8000-00000000d001"
)

// at returns a time on the fixture's day: at(2, 10) is 10:00:02.010.
func at(sec, ms int) time.Time {
	return time.Date(2026, 1, 5, 10, 0, sec, ms*int(time.Millisecond), time.UTC)
}

func newJournal(t *testing.T, records ...event.Record) *memory.Store {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	if len(records) > 0 {
		if _, err := st.Append(context.Background(), records); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func cmEvent(wt event.WatchType, rv string, observed time.Time) event.Record {
	ref := storagetest.Ref(cmStream, "ConfigMap", "shop", "settings", cmUID, rv)
	return storagetest.Event(cmStream, wt, ref, storagetest.ConfigMap("shop", "settings", cmUID, rv, map[string]string{"rv": rv}), observed)
}

func deployEvent(wt event.WatchType, rv string, observed time.Time) event.Record {
	ref := storagetest.Ref(deployStream, "Deployment", "shop", "web", deployUID, rv)
	return storagetest.Event(deployStream, wt, ref, storagetest.Deployment("shop", "web", deployUID, rv, 2, "web:1"), observed)
}

// fixtureJournal is what a collector recorded while the requests of
// testdata/audit/handwritten.log were made.
type fixtureJournal struct {
	added, modified, deleted, deployScaled event.Record
	all                                    []event.Record
}

func newFixtureJournal() fixtureJournal {
	var j fixtureJournal
	j.all = append(j.all, storagetest.Baseline(cmStream, "b-cm", at(-30, 0), "900", nil)...)
	deployBaseline := storagetest.Item{
		Ref:    storagetest.Ref(deployStream, "Deployment", "shop", "web", deployUID, "950"),
		Object: storagetest.Deployment("shop", "web", deployUID, "950", 1, "web:1"),
	}
	j.all = append(j.all, storagetest.Baseline(deployStream, "b-deploy", at(-30, 0), "960", []storagetest.Item{deployBaseline})...)
	j.added = cmEvent(event.Added, "1001", at(0, 120))
	j.modified = cmEvent(event.Modified, "1002", at(2, 15))
	j.deployScaled = deployEvent(event.Modified, "1003", at(3, 12))
	j.deleted = cmEvent(event.Deleted, "1004", at(4, 9))
	j.all = append(j.all, j.added, j.modified, j.deployScaled, j.deleted)
	return j
}

func newCorrelator(t *testing.T, j storage.ReadWriter, opts ...Option) *Correlator {
	t.Helper()
	c, err := NewCorrelator(j, cluster, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func correlationsOf(t *testing.T, st storage.Reader, targets ...event.Record) map[string][]event.Record {
	t.Helper()
	ids := make([]string, len(targets))
	for i, r := range targets {
		ids[i] = r.EventID
	}
	got, err := st.Correlations(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestIngestHandwrittenLog(t *testing.T) {
	j := newFixtureJournal()
	st := newJournal(t, j.all...)
	c := newCorrelator(t, st)
	path := filepath.Join("..", "testdata", "audit", "handwritten.log")

	ingest := func() Summary {
		t.Helper()
		files, err := OpenFiles([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		defer files.Close()
		sum, err := c.Ingest(context.Background(), files)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	sum := ingest()
	want := Summary{Events: 7, Exact: 3, Scored: 1, Malformed: 2, SkippedReadOnly: 2, SkippedFailed: 1, Recorded: 4}
	if got := withoutProblems(sum); !reflect.DeepEqual(got, want) {
		t.Errorf("summary = %+v\nwant      %+v", got, want)
	}
	if len(sum.Problems) != 2 || sum.Problems[0].Line != 5 || sum.Problems[1].Line != 9 {
		t.Errorf("problems = %v, want lines 5 and 9", sum.Problems)
	}

	corr := correlationsOf(t, st, j.added, j.modified, j.deleted, j.deployScaled)
	for _, tc := range []struct {
		name       string
		target     event.Record
		user, verb string
		rule       string
		confidence float64
	}{
		{"create", j.added, "alice", "create", RuleExactResourceVersion, 1},
		{"update", j.modified, "bob", "update", RuleExactResourceVersion, 1},
		{"delete", j.deleted, "alice", "delete", RuleExactUIDDeletion, 1},
		{"metadata-level patch", j.deployScaled, "alice", "patch", RuleNearestFollowing, ConfidenceSoleCandidate},
	} {
		list := corr[tc.target.EventID]
		if len(list) != 1 {
			t.Errorf("%s: %d correlations, want 1", tc.name, len(list))
			continue
		}
		a := list[0].Audit
		if a.User != tc.user || a.Verb != tc.verb || a.Rule != tc.rule || a.Confidence != tc.confidence {
			t.Errorf("%s: correlated to %s %s by rule %s (%.2f), want %s %s by %s (%.2f)",
				tc.name, a.User, a.Verb, a.Rule, a.Confidence, tc.user, tc.verb, tc.rule, tc.confidence)
		}
		if a.UserAgent == "" || len(a.SourceIPs) != 1 || a.SourceIPs[0] != "192.0.2.10" || a.AuditID == "" ||
			a.RequestURI == "" || a.RequestReceivedAt.IsZero() || len(a.Groups) != 2 {
			t.Errorf("%s: provenance incomplete: %+v", tc.name, a)
		}
		if list[0].ClusterID != cluster || list[0].Resource.Name != tc.target.Resource.Name {
			t.Errorf("%s: record cluster %q resource %v", tc.name, list[0].ClusterID, list[0].Resource)
		}
	}

	before, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	again := ingest()
	if again.Recorded != 0 || again.Duplicates != 4 || again.Exact != 3 || again.Scored != 1 {
		t.Errorf("second ingest: %+v, want nothing recorded, 4 duplicates, same matches", withoutProblems(again))
	}
	after, err := st.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Records != before.Records {
		t.Errorf("second ingest grew the journal from %d to %d records", before.Records, after.Records)
	}
}

func withoutProblems(s Summary) Summary {
	s.Problems = nil
	return s
}

// writeEvent returns a ResponseComplete audit event of a write on the
// configmap shop/settings, received at received and completed 5ms later.
func writeEvent(id, user, verb string, received time.Time, response any) Event {
	e := Event{
		Kind: "Event", APIVersion: APIVersion, Level: LevelRequestResponse, AuditID: id,
		Stage: StageResponseComplete, Verb: verb, RequestURI: "/api/v1/namespaces/shop/configmaps/settings",
		User:                     authnv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}},
		SourceIPs:                []string{"192.0.2.20"},
		UserAgent:                "test",
		ObjectRef:                &ObjectReference{Resource: "configmaps", Namespace: "shop", Name: "settings", APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Code: 200},
		RequestReceivedTimestamp: metav1.NewMicroTime(received),
		StageTimestamp:           metav1.NewMicroTime(received.Add(5 * time.Millisecond)),
	}
	if verb == "create" {
		e.ResponseStatus.Code = 201
	}
	switch r := response.(type) {
	case nil:
		e.Level = LevelMetadata
	case []byte:
		e.ResponseObject = r
	default:
		b, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		e.ResponseObject = b
	}
	return e
}

func cmBody(rv string) []byte {
	return storagetest.ConfigMap("shop", "settings", cmUID, rv, map[string]string{"rv": rv})
}

// terminatingBody is the object a delete returns when finalizers keep it:
// with a deletionTimestamp, at the resourceVersion of that change.
func terminatingBody(rv string) []byte {
	var obj map[string]any
	if err := json.Unmarshal(cmBody(rv), &obj); err != nil {
		panic(err)
	}
	md := obj["metadata"].(map[string]any)
	md["deletionTimestamp"] = "2026-01-05T10:00:03Z"
	md["finalizers"] = []string{"example.com/keep"}
	b, _ := json.Marshal(obj)
	return b
}

func deleteStatus(uid string) map[string]any {
	return map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success",
		"details": map[string]any{"name": "settings", "kind": "configmaps", "uid": uid}}
}

func TestMatch(t *testing.T) {
	added := cmEvent(event.Added, "1001", at(0, 120))
	modified := cmEvent(event.Modified, "1002", at(2, 15))
	// A delete of an object with a finalizer: MODIFIED (deletionTimestamp),
	// then DELETED when the finalizer is removed.
	terminating := cmEvent(event.Modified, "1003", at(3, 10))
	deleted := cmEvent(event.Deleted, "1004", at(4, 9))
	baseline := storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil)
	journal := append(append([]event.Record{}, baseline...), added, modified, terminating, deleted)

	gapFrom := at(2, 15)
	relist := at(9, 0)
	inferred := storagetest.InferredDelete(cmStream, modified, gapFrom, relist, "b2")
	inferredJournal := append(append([]event.Record{}, baseline...), added, modified,
		storagetest.Gap(cmStream, gapFrom, at(8, 0), "410 Gone", "1002"))
	inferredJournal = append(inferredJournal, storagetest.Baseline(cmStream, "b2", relist, "2000", nil)...)
	inferredJournal = append(inferredJournal, inferred)

	twoQuick := append(append([]event.Record{}, baseline...), added,
		cmEvent(event.Modified, "1002", at(1, 0)), cmEvent(event.Modified, "1003", at(1, 500)))

	reviewRef := func(e Event) Event {
		e.ObjectRef = &ObjectReference{Resource: "tokenreviews", APIGroup: "authentication.k8s.io", APIVersion: "v1"}
		return e
	}
	withStage := func(e Event, s Stage) Event { e.Stage = s; return e }
	withURI := func(e Event, uri string) Event { e.RequestURI = uri; return e }
	withCode := func(e Event, code int32) Event { e.ResponseStatus.Code = code; return e }
	withSub := func(e Event, sub string) Event { e.ObjectRef.Subresource = sub; return e }

	for _, tc := range []struct {
		name    string
		journal []event.Record
		evt     Event
		want    event.Record // zero when no match is expected
		wantErr error
	}{
		{"create by RV", journal, writeEvent("a1", "alice", "create", at(0, 100), cmBody("1001")), added, nil},
		{"update by RV", journal, writeEvent("a2", "bob", "update", at(2, 0), cmBody("1002")), modified, nil},
		{"status subresource by RV", journal, withSub(writeEvent("a2s", "ctrl", "update", at(2, 0), cmBody("1002")), "status"), modified, nil},
		{"delete answered by Status", journal, writeEvent("a3", "alice", "delete", at(4, 0), deleteStatus(cmUID)), deleted, nil},
		{"delete answered by the object at its deletion RV", journal, writeEvent("a4", "alice", "delete", at(4, 0), cmBody("1004")), deleted, nil},
		{"delete answered by the object before deletion (older servers)", journal, writeEvent("a5", "alice", "delete", at(4, 0), cmBody("1002")), deleted, nil},
		{"delete of an object with finalizers", journal, writeEvent("a6", "alice", "delete", at(3, 0), terminatingBody("1003")), terminating, nil},
		{"delete seen only as an inferred deletion", inferredJournal, writeEvent("a7", "alice", "delete", at(5, 0), deleteStatus(cmUID)), inferred, nil},
		{"metadata level: nearest following event", journal, writeEvent("a8", "bob", "patch", at(2, 0), nil), modified, nil},
		{"metadata level: ambiguous", twoQuick, writeEvent("a9", "bob", "patch", at(0, 900), nil), twoQuick[len(twoQuick)-2], nil},
		{"metadata level: delete", journal, writeEvent("a9d", "bob", "delete", at(3, 900), nil), deleted, nil},

		{"no-op update returns an old RV", journal, writeEvent("b1", "bob", "update", at(20, 0), cmBody("1002")), event.Record{}, ErrNotAChange},
		{"RV not in the journal", journal, writeEvent("b2", "bob", "update", at(2, 0), cmBody("5555")), event.Record{}, ErrNoMatch},
		{"delete of an unknown uid", journal, writeEvent("b3", "bob", "delete", at(4, 0), deleteStatus("other-uid")), event.Record{}, ErrNoMatch},
		{"metadata level: nothing in the window", journal, writeEvent("b4", "bob", "patch", at(50, 0), nil), event.Record{}, ErrNoMatch},
		{"metadata level: create cannot be a MODIFIED", journal, writeEvent("b5", "bob", "create", at(2, 0), nil), event.Record{}, ErrNoMatch},
		{"dry run", journal, withURI(writeEvent("b6", "bob", "patch", at(2, 0), cmBody("1002")), "/api/v1/namespaces/shop/configmaps/settings?dryRun=All"), event.Record{}, ErrNotAChange},
		{"failed", journal, withCode(writeEvent("b7", "bob", "update", at(2, 0), cmBody("1002")), 409), event.Record{}, ErrNotAChange},
		{"read-only", journal, writeEvent("b8", "bob", "get", at(2, 0), cmBody("1002")), event.Record{}, ErrNotAChange},
		{"not ResponseComplete", journal, withStage(writeEvent("b9", "bob", "update", at(2, 0), cmBody("1002")), StageResponseStarted), event.Record{}, ErrNotAChange},
		{"panic", journal, withStage(writeEvent("b10", "bob", "update", at(2, 0), cmBody("1002")), StagePanic), event.Record{}, ErrNotAChange},
		{"review stores nothing", journal, reviewRef(writeEvent("b11", "bob", "create", at(2, 0), map[string]any{"kind": "TokenReview", "metadata": map[string]any{}})), event.Record{}, ErrNotAChange},
		{"exec stores nothing", journal, withSub(writeEvent("b12", "bob", "create", at(2, 0), nil), "exec"), event.Record{}, ErrNotAChange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCorrelator(t, newJournal(t, tc.journal...))
			got, err := c.Match(context.Background(), tc.evt)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || got != "" {
					t.Fatalf("Match = %q, %v; want error %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want.EventID {
				t.Fatalf("Match = %q, %v; want %s %s rv %s (%s)", got, err, tc.want.WatchType, tc.want.Resource.Name, tc.want.Resource.ResourceVersion, tc.want.EventID)
			}
		})
	}
}

func TestRulesAndConfidences(t *testing.T) {
	modified := cmEvent(event.Modified, "1002", at(1, 0))
	modifiedAgain := cmEvent(event.Modified, "1003", at(1, 500))
	st := newJournal(t, append(storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil), modified, modifiedAgain)...)
	c := newCorrelator(t, st)

	// One exact update, one Metadata-level patch whose window holds both
	// events: the exact claim removes 1002 from the candidates, so the
	// patch gets 1003 as the sole remaining candidate.
	sum, err := c.Ingest(context.Background(), Events(
		writeEvent("meta", "bob", "patch", at(0, 900), nil),
		writeEvent("exact", "alice", "update", at(0, 950), cmBody("1002")),
	))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Exact != 1 || sum.Scored != 1 || sum.Recorded != 2 {
		t.Fatalf("summary %+v", withoutProblems(sum))
	}
	corr := correlationsOf(t, st, modified, modifiedAgain)
	if a := corr[modified.EventID]; len(a) != 1 || a[0].Audit.AuditID != "exact" || a[0].Audit.Rule != RuleExactResourceVersion {
		t.Errorf("1002 correlations: %+v", a)
	}
	if a := corr[modifiedAgain.EventID]; len(a) != 1 || a[0].Audit.AuditID != "meta" || a[0].Audit.Confidence != ConfidenceSoleCandidate {
		t.Errorf("1003 correlations: %+v", a)
	}

	// A no-op update ingested later returns the same resourceVersion: the
	// stored exact claim says it changed nothing.
	if _, err := c.Match(context.Background(), writeEvent("noop", "bob", "update", at(1, 200), cmBody("1002"))); !errors.Is(err, ErrNotAChange) {
		t.Errorf("no-op update after the exact claim: err = %v, want ErrNotAChange", err)
	}
	// The claiming request itself still matches (re-ingesting is idempotent).
	if id, err := c.Match(context.Background(), writeEvent("exact", "alice", "update", at(0, 950), cmBody("1002"))); err != nil || id != modified.EventID {
		t.Errorf("Match of the claiming request = %q, %v", id, err)
	}

	// A later ingest sees the stored exact claim too.
	id, err := c.Match(context.Background(), writeEvent("meta2", "bob", "patch", at(0, 900), nil))
	if err != nil || id != modifiedAgain.EventID {
		t.Errorf("Match after the exact claim = %q, %v; want the 1003 event", id, err)
	}
}

func TestBestEffortConfidence(t *testing.T) {
	added := cmEvent(event.Added, "1001", at(0, 0))
	modified := cmEvent(event.Modified, "1002", at(1, 0))
	modifiedAgain := cmEvent(event.Modified, "1003", at(1, 500))
	st := newJournal(t, append(storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil), added, modified, modifiedAgain)...)
	c := newCorrelator(t, st)
	withRef := func(e Event, uid, rv string) Event { e.ObjectRef.UID, e.ObjectRef.ResourceVersion = uid, rv; return e }

	for _, tc := range []struct {
		name       string
		evt        Event
		want       event.Record
		confidence float64
	}{
		// Received at 0.9: 1002 and 1003 follow, 1001 precedes.
		{"two follow", writeEvent("p1", "bob", "patch", at(0, 900), nil), modified, ConfidenceAmbiguous},
		// Received at 1.2: only 1003 follows; 1002 is within the skew before.
		{"one follows", writeEvent("p2", "bob", "patch", at(1, 200), nil), modifiedAgain, ConfidenceSoleCandidate},
		// Received at 2.2: nothing follows; 1003 is within the skew before.
		{"only before, within the skew", writeEvent("p3", "bob", "patch", at(2, 200), nil), modifiedAgain, ConfidenceAmbiguous},
		// An update that started from 1002 cannot have produced 1002, even
		// when the collector observed 1002 after the update was received.
		{"precondition excluded", withRef(writeEvent("u1", "bob", "update", at(0, 900), nil), cmUID, "1002"), modifiedAgain, ConfidenceSoleCandidate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, found, err := c.matchBestEffort(context.Background(), tc.evt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if o != outcomeScored || len(found) != 1 {
				t.Fatalf("outcome %v, %d matches", o, len(found))
			}
			m := found[0]
			if m.target.EventID != tc.want.EventID || m.confidence != tc.confidence || m.rule != RuleNearestFollowing {
				t.Errorf("matched rv %s with %.1f by %s, want rv %s with %.1f", m.target.Resource.ResourceVersion, m.confidence, m.rule,
					tc.want.Resource.ResourceVersion, tc.confidence)
			}
		})
	}
	if _, err := c.Match(context.Background(), withRef(writeEvent("u2", "bob", "update", at(0, 900), nil), "other-uid", "")); !errors.Is(err, ErrNoMatch) {
		t.Errorf("update of another uid: err = %v, want ErrNoMatch", err)
	}
}

func TestIngestDeleteCollection(t *testing.T) {
	var records []event.Record
	records = append(records, storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil)...)
	var deletions []event.Record
	var items []any
	for i, name := range []string{"a", "b", "c"} {
		uid := fmt.Sprintf("uid-%s", name)
		ref := storagetest.Ref(cmStream, "ConfigMap", "shop", name, uid, fmt.Sprint(1000+i))
		records = append(records, storagetest.Event(cmStream, event.Added, ref, storagetest.ConfigMap("shop", name, uid, ref.ResourceVersion, nil), at(0, i)))
		if name == "c" {
			continue // c is not in the journal's deletions: unmatched, not fatal
		}
		del := ref
		del.ResourceVersion = fmt.Sprint(2000 + i)
		d := storagetest.Event(cmStream, event.Deleted, del, storagetest.ConfigMap("shop", name, uid, del.ResourceVersion, nil), at(5, i))
		records = append(records, d)
		deletions = append(deletions, d)
		items = append(items, map[string]any{"metadata": map[string]any{"name": name, "namespace": "shop", "uid": uid, "resourceVersion": ref.ResourceVersion}})
	}
	items = append(items, map[string]any{"metadata": map[string]any{"name": "c", "namespace": "shop", "uid": "uid-c", "resourceVersion": "1002"}})
	st := newJournal(t, records...)
	c := newCorrelator(t, st)

	evt := writeEvent("dc", "alice", "deletecollection", at(4, 900), map[string]any{"kind": "ConfigMapList", "apiVersion": "v1", "items": items})
	evt.ObjectRef.Name = ""
	sum, err := c.Ingest(context.Background(), Events(evt))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Exact != 1 || sum.Recorded != 2 {
		t.Fatalf("summary %+v, want one exact event with two records", withoutProblems(sum))
	}
	corr := correlationsOf(t, st, deletions...)
	for _, d := range deletions {
		if list := corr[d.EventID]; len(list) != 1 || list[0].Audit.Rule != RuleExactUIDDeletion {
			t.Errorf("deletion of %s: correlations %+v", d.Resource.Name, list)
		}
	}
}

// failingSource yields its events, then a fatal error.
type failingSource struct {
	events []Event
	err    error
}

func (f *failingSource) Next(ctx context.Context) (Event, error) {
	if len(f.events) == 0 {
		return Event{}, f.err
	}
	e := f.events[0]
	f.events = f.events[1:]
	return e, nil
}

func TestIngestRecordsWhatItReadBeforeAFatalError(t *testing.T) {
	added := cmEvent(event.Added, "1001", at(0, 120))
	st := newJournal(t, append(storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil), added)...)
	c := newCorrelator(t, st)
	boom := errors.New("disk on fire")
	sum, err := c.Ingest(context.Background(), &failingSource{
		events: []Event{writeEvent("a1", "alice", "create", at(0, 100), cmBody("1001"))},
		err:    boom,
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the source's error", err)
	}
	if sum.Exact != 1 || sum.Recorded != 1 {
		t.Errorf("summary %+v, want the event read before the error recorded", withoutProblems(sum))
	}
	if corr := correlationsOf(t, st, added); len(corr[added.EventID]) != 1 {
		t.Errorf("correlation not stored")
	}
}

func TestIngestBatchesAndCapsProblems(t *testing.T) {
	added := cmEvent(event.Added, "1001", at(0, 120))
	st := newJournal(t, append(storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil), added)...)
	c := newCorrelator(t, st, WithBatchSize(2), WithMaxProblems(3))
	var input []byte
	for i := 0; i < 5; i++ {
		input = append(input, "garbage\n"...)
		line, _ := json.Marshal(writeEvent(fmt.Sprintf("get-%d", i), "bob", "get", at(1, i), nil))
		input = append(append(input, line...), '\n')
	}
	line, _ := json.Marshal(writeEvent("create", "alice", "create", at(0, 100), cmBody("1001")))
	input = append(input, line...)
	r, err := NewReader(bytes.NewReader(input), "mixed")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := c.Ingest(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Events != 6 || sum.SkippedReadOnly != 5 || sum.Exact != 1 || sum.Malformed != 5 || len(sum.Problems) != 3 || sum.Recorded != 1 {
		t.Errorf("summary %+v with %d problems", withoutProblems(sum), len(sum.Problems))
	}
	if sum.Problems[2].Line != 5 {
		t.Errorf("third problem at line %d, want 5", sum.Problems[2].Line)
	}
}

// On a journal opened read-only, Match answers and Ingest fails with
// storage.ErrReadOnly at its first append of correlations.
func TestIngestOnAReadOnlyJournal(t *testing.T) {
	ctx := context.Background()
	w, ro := readonly.Journal(t)
	j := newFixtureJournal()
	if _, err := w.Append(ctx, j.all); err != nil {
		t.Fatal(err)
	}
	c := newCorrelator(t, ro)
	create := writeEvent("a1", "alice", "create", at(0, 100), cmBody("1001"))
	if id, err := c.Match(ctx, create); err != nil || id != j.added.EventID {
		t.Fatalf("Match on a read-only journal = %q, %v; want %s", id, err, j.added.EventID)
	}
	sum, err := c.Ingest(ctx, Events(create))
	if !errors.Is(err, storage.ErrReadOnly) || sum.Exact != 1 || sum.Recorded != 0 {
		t.Fatalf("Ingest on a read-only journal = %+v, %v; want one exact match, none recorded, storage.ErrReadOnly", sum, err)
	}
	if got := correlationsOf(t, w, j.added); len(got[j.added.EventID]) != 0 {
		t.Fatalf("a read-only Ingest stored correlations: %v", got)
	}
}

func TestNewCorrelatorValidates(t *testing.T) {
	st := newJournal(t)
	for name, tc := range map[string]struct {
		j       storage.ReadWriter
		cluster string
		opts    []Option
	}{
		"nil journal":     {nil, cluster, nil},
		"no cluster":      {st, "", nil},
		"negative skew":   {st, cluster, []Option{WithClockSkew(-time.Second)}},
		"negative window": {st, cluster, []Option{WithMatchWindow(-time.Second)}},
		"zero batch":      {st, cluster, []Option{WithBatchSize(0)}},
		"negative cap":    {st, cluster, []Option{WithMaxProblems(-1)}},
	} {
		if _, err := NewCorrelator(tc.j, tc.cluster, tc.opts...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestIngestStopsOnCancelledContext(t *testing.T) {
	c := newCorrelator(t, newJournal(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Ingest(ctx, Events(writeEvent("a", "alice", "create", at(0, 0), cmBody("1"))))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
