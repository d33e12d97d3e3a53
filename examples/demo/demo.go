package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	workload "github.com/krply/krply/krplytest/shop"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// The namespaces of the demo.
const (
	shop    = workload.Namespace
	sandbox = "shop-sandbox"
)

var (
	namespacesGVR = workload.NamespacesGVR
	configMapsGVR = workload.ConfigMapsGVR
	servicesGVR   = workload.ServicesGVR
	deployGVR     = workload.DeploymentsGVR
)

// result is what the demo found, for its test.
type result struct {
	// The journal and its recorder, still running until the demo's cleanup.
	Journal   *krply.Journal
	Collector *watch.Collector

	ClusterID         string
	Gaps              int
	InferredDeletions []string
	OutageComplete    bool
	OutageMissing     int
	FinalComplete     bool
	PlanRefused       bool
	Planned           []string
	Excluded          []string
	DryRun            replay.Status
	Applied           map[string]replay.Outcome
	WebAuthors        []string
	DiffObjects       []string
	SandboxObjects    []string
}

// demo holds what the steps share.
type demo struct {
	out   io.Writer
	start time.Time
	j     *krply.Journal
	// journal is the path of a journal kept after the demo ("" for a temporary one).
	journal string
	rec     *watch.Collector
	stop    func() error
	source  *rest.Config // the apiserver the recorder watches
	users   map[string]dynamic.Interface
}

// run runs the demo; the journal is kept at journal, or in a temporary
// folder removed at the end when journal is empty.
func run(ctx context.Context, t testenv.TB, out io.Writer, log logr.Logger, journal string) (*result, error) {
	d := &demo{out: out, start: time.Now(), users: map[string]dynamic.Interface{}}
	res := &result{Applied: map[string]replay.Outcome{}}

	d.section("Starting a local control plane: etcd, a kube-apiserver with an audit log, and a second one without watch cache")
	env := testenv.Start(t, testenv.WithAudit(""))
	// The recorder watches through an apiserver without watch cache: a watch
	// from a compacted resourceVersion then really fails with 410 Gone.
	d.source = env.StartAPIServer(t, "--watch-cache=false").Config()
	for _, u := range []string{testenv.UserAdmin, testenv.UserAlice, testenv.UserBob} {
		dyn, err := dynamic.NewForConfig(env.ConfigFor(u))
		if err != nil {
			return nil, err
		}
		d.users[u] = dyn
	}
	d.say("apiserver %s (audit log on), recorder's apiserver %s", env.Host(), d.source.Host)

	if journal == "" {
		dir, err := os.MkdirTemp("", "krply-demo-")
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		journal = filepath.Join(dir, "journal.db")
	} else {
		// Each run records a new journal.
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(journal + suffix); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
		d.journal = journal
	}
	var err error
	d.j, err = krply.Open(ctx, journal,
		krply.WithResources("ns", "deploy", "cm", "svc", "pods", "sa"), krply.WithNamespaces(shop),
		krply.WithPolicy(replay.Policy{AllowSourceCluster: true}), krply.WithLogger(log),
		krply.WithCollectorOptions(watch.WithBackoff(100*time.Millisecond, 2*time.Second)))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = d.j.Close() })
	t.Cleanup(func() {
		if d.stop != nil {
			_ = d.stop()
		}
	})

	d.section("Recording namespaces, and deployments, configmaps, services, pods and serviceaccounts in %q", shop)
	if err := d.startRecorder(ctx); err != nil {
		return nil, err
	}
	res.ClusterID = d.rec.ClusterID()
	d.say("recorder synced; cluster ID %s (the UID of kube-system)", res.ClusterID)

	d.section("Workload: alice sets up the shop")
	ops := []func() error{
		func() error { return d.create(ctx, testenv.UserAdmin, workload.NamespaceObject(shop)) },
		func() error {
			return d.create(ctx, testenv.UserAlice, workload.ConfigMap("settings", map[string]any{"color": "blue"}))
		},
		func() error {
			return d.create(ctx, testenv.UserAlice, workload.ConfigMap("cache", map[string]any{"size": "1Gi"}))
		},
		func() error {
			return d.create(ctx, testenv.UserAlice, workload.ConfigMap("legacy", map[string]any{"unused": "yes"}))
		},
		func() error { return d.create(ctx, testenv.UserAlice, workload.Deployment("web", "nginx:1.27", 1)) },
		func() error { return d.create(ctx, testenv.UserAlice, workload.Service("web")) },
		func() error { return d.create(ctx, testenv.UserAlice, workload.ServiceAccount("deployer")) },
		func() error { return d.create(ctx, testenv.UserAlice, workload.Pod("debug", "deployer")) },
	}
	if err := all(ops); err != nil {
		return nil, err
	}
	t1, err := d.mark(ctx)
	if err != nil {
		return nil, err
	}

	d.section("Workload: bob and alice change things")
	ops = []func() error{
		func() error {
			return d.update(ctx, testenv.UserBob, configMapsGVR, "settings", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
			})
		},
		func() error {
			return d.update(ctx, testenv.UserAlice, deployGVR, "web", func(u *unstructured.Unstructured) {
				workload.SetImage(u, "nginx:1.28")
			})
		},
		func() error {
			return d.patch(ctx, testenv.UserBob, deployGVR, "web", `{"spec":{"replicas":3}}`, "scale web to 3")
		},
		func() error { return d.delete(ctx, testenv.UserAlice, configMapsGVR, "legacy") },
	}
	if err := all(ops); err != nil {
		return nil, err
	}

	d.section("Outage: the recorder stops; meanwhile bob deletes a ConfigMap and scales web, and etcd is compacted")
	if err := d.stop(); err != nil {
		return nil, fmt.Errorf("stop the recorder: %w", err)
	}
	d.stop = nil
	d.say("recorder stopped")
	if err := d.delete(ctx, testenv.UserBob, configMapsGVR, "cache"); err != nil {
		return nil, err
	}
	if err := d.patch(ctx, testenv.UserBob, deployGVR, "web", `{"spec":{"replicas":2}}`, "scale web to 2"); err != nil {
		return nil, err
	}
	inOutage := time.Now()
	rev, err := env.Compact(ctx)
	if err != nil {
		return nil, fmt.Errorf("compact etcd: %w", err)
	}
	d.say("etcd compacted at revision %d: the history the recorder missed is gone from the server", rev)
	time.Sleep(200 * time.Millisecond)

	d.section("Recovery: the recorder restarts from its checkpoint, gets 410 Gone, records a gap and relists")
	if err := d.startRecorder(ctx); err != nil {
		return nil, err
	}
	d.say("recorder synced again")
	if err := d.inferred(ctx, res); err != nil {
		return nil, err
	}
	if err := d.update(ctx, testenv.UserAlice, configMapsGVR, "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "red", "data", "color")
	}); err != nil {
		return nil, err
	}
	t4, err := d.mark(ctx)
	if err != nil {
		return nil, err
	}

	d.section("Who did it: correlating the apiserver's audit log with the journal")
	time.Sleep(500 * time.Millisecond) // the audit backend writes moments after the response
	if err := d.correlate(ctx, env.AuditLogPath(), res.ClusterID); err != nil {
		return nil, err
	}

	if err := d.coverage(ctx, res, inOutage); err != nil {
		return nil, err
	}
	if err := d.timeline(ctx, res); err != nil {
		return nil, err
	}
	if err := d.diff(ctx, res, t1, t4); err != nil {
		return nil, err
	}
	if err := d.snapshots(ctx, res, inOutage, t4); err != nil {
		return nil, err
	}
	if err := d.replay(ctx, res, env.Config(), inOutage, t4); err != nil {
		return nil, err
	}
	d.section("Done in %s", time.Since(d.start).Round(100*time.Millisecond))
	if d.journal != "" {
		d.say("the journal is kept in %s; serve it with the query API (docs/reference/query-api.md):", d.journal)
		d.say("  kubectl krply record --serve-only --ui --journal %s --listen 127.0.0.1:8080", d.journal)
		d.say("  (the plugin: cd cmd/kubectl-krply && go install .)")
		d.say("  curl 'http://127.0.0.1:8080/api/v1/history?resource=configmaps&namespace=%s&name=settings'", shop)
	}
	res.Journal, res.Collector = d.j, d.rec
	return res, nil
}

func all(ops []func() error) error {
	for _, op := range ops {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// startRecorder starts a Collector on the journal and waits for its sync.
func (d *demo) startRecorder(ctx context.Context) error {
	// A progress checkpoint every 2s (instead of 10s) keeps the marks quick.
	rec, err := d.j.NewCollectorForConfig(d.source, watch.WithProgressInterval(2*time.Second))
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Start(rctx) }()
	d.rec = rec
	d.stop = func() error { cancel(); return <-done }
	// Generous: on a busy machine a fresh apiserver answers slowly.
	sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
	defer scancel()
	if err := rec.WaitForSync(sctx); err != nil {
		var b strings.Builder
		for _, st := range rec.Status() {
			fmt.Fprintf(&b, "\n  %s: %s synced=%v %s", st.StreamID, st.State, st.Synced, st.DegradedReason)
		}
		return fmt.Errorf("recorder did not sync: %w%s", err, b.String())
	}
	return nil
}

// mark returns a time between the writes made before it (each awaited
// until recorded) and those made after, once every stream has evidence
// after it: the journal covers a time only up to a stream's last evidence
// (an event, a bookmark, a progress checkpoint).
func (d *demo) mark(ctx context.Context) (time.Time, error) {
	at := time.Now()
	time.Sleep(50 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := d.rec.WaitForProgress(wctx, at); err != nil {
		return at, fmt.Errorf("mark: %w", err)
	}
	return at, nil
}

func (d *demo) section(format string, args ...any) {
	fmt.Fprintf(d.out, "\n== %s\n", fmt.Sprintf(format, args...))
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "   %s\n", fmt.Sprintf(format, args...))
}

// stream shows a stream ID without its cluster.
func (d *demo) stream(id string) string {
	if d.rec != nil {
		return strings.TrimPrefix(id, d.rec.ClusterID()+"/")
	}
	return id
}

// rel shows a time relative to the demo's start.
func (d *demo) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("+%.1fs", t.Sub(d.start).Seconds())
}

// objectID names an object of the shop for the journal.
func (d *demo) objectID(gvr schema.GroupVersionResource, name string) storage.ObjectID {
	ns := shop
	if gvr == namespacesGVR {
		ns = ""
	}
	return storage.ObjectID{ClusterID: d.rec.ClusterID(), Group: gvr.Group, Resource: gvr.Resource, Namespace: ns, Name: name}
}

// awaitRecorded waits until the journal holds obj at resourceVersion rv
// (or, with rv "", its deletion), when the recorder runs.
func (d *demo) awaitRecorded(ctx context.Context, obj storage.ObjectID, rv string) error {
	if d.stop == nil {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if rv != "" {
			if _, err := d.j.Store().EventByResourceVersion(ctx, obj, "", rv); err == nil {
				return nil
			}
		} else if rec, err := d.j.Store().LatestAt(ctx, obj, time.Now()); err == nil && rec.WatchType == event.Deleted {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("the recorder did not record %s/%s at %q within 30s", obj.Resource, obj.Name, rv)
}

func (d *demo) create(ctx context.Context, user string, u *unstructured.Unstructured) error {
	gvr := workload.GVR(u)
	ri := d.users[user].Resource(gvr).Namespace(u.GetNamespace())
	out, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("%s creates %s %s: %w", user, u.GetKind(), u.GetName(), err)
	}
	d.say("%-6s %-7s creates %s %s", d.rel(time.Now()), user, u.GetKind(), u.GetName())
	return d.awaitRecorded(ctx, d.objectID(gvr, u.GetName()), out.GetResourceVersion())
}

func (d *demo) update(ctx context.Context, user string, gvr schema.GroupVersionResource, name string, mutate func(*unstructured.Unstructured)) error {
	ri := d.users[user].Resource(gvr).Namespace(shop)
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	mutate(u)
	out, err := ri.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("%s updates %s: %w", user, name, err)
	}
	d.say("%-6s %-7s updates %s %s", d.rel(time.Now()), user, u.GetKind(), name)
	return d.awaitRecorded(ctx, d.objectID(gvr, name), out.GetResourceVersion())
}

func (d *demo) patch(ctx context.Context, user string, gvr schema.GroupVersionResource, name, patch, what string) error {
	out, err := d.users[user].Resource(gvr).Namespace(shop).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("%s: %s: %w", user, what, err)
	}
	d.say("%-6s %-7s %s", d.rel(time.Now()), user, what)
	return d.awaitRecorded(ctx, d.objectID(gvr, name), out.GetResourceVersion())
}

func (d *demo) delete(ctx context.Context, user string, gvr schema.GroupVersionResource, name string) error {
	if err := d.users[user].Resource(gvr).Namespace(shop).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("%s deletes %s: %w", user, name, err)
	}
	d.say("%-6s %-7s deletes %s %s", d.rel(time.Now()), user, gvr.Resource, name)
	return d.awaitRecorded(ctx, d.objectID(gvr, name), "")
}

// inferred prints the deletions the relist inferred.
func (d *demo) inferred(ctx context.Context, res *result) error {
	q := storage.Query{ClusterID: d.rec.ClusterID(), Types: []event.RecordType{event.TypeEvent}, Descending: true, Limit: 200, WithoutBodies: true}
	page, err := d.j.Store().Records(ctx, q)
	if err != nil {
		return err
	}
	for _, r := range page.Records {
		if r.Inferred != nil {
			res.InferredDeletions = append(res.InferredDeletions, r.Resource.Kind+"/"+r.Resource.Name)
			d.say("inferred deletion: %s %s is absent from the relist: deleted between %s and %s", r.Resource.Kind, r.Resource.Name, d.rel(r.Inferred.From), d.rel(r.Inferred.To))
		}
	}
	return nil
}

func (d *demo) correlate(ctx context.Context, path, clusterID string) error {
	// Link the log's writes to the journal events they caused, so that
	// histories say who made each change.
	c, err := audit.NewCorrelator(d.j.Store(), clusterID)
	if err != nil {
		return err
	}
	files, err := audit.OpenFiles([]string{path})
	if err != nil {
		return err
	}
	defer files.Close()
	sum, err := c.Ingest(ctx, files)
	if err != nil {
		return err
	}
	d.say("%d audit events: %d writes matched to journal events exactly, %d by best effort; %d writes to objects krply does not record or saw only by a relist; %d malformed lines",
		sum.Events, sum.Exact, sum.Scored, sum.Unmatched, sum.Malformed)
	return nil
}

func (d *demo) table() *tabwriter.Writer {
	return tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
}

// coverage prints every stream with its gaps and its coverage now and in
// the outage.
func (d *demo) coverage(ctx context.Context, res *result, inOutage time.Time) error {
	d.section("Stream coverage (each stream is one list+watch; times are when krply observed them)")
	streams, err := d.j.Store().Streams(ctx, res.ClusterID)
	if err != nil {
		return err
	}
	tw := d.table()
	d.say("cluster %s; a stream's ID is <cluster>/<group>/<version>/<resource>[/<namespace>]", res.ClusterID)
	fmt.Fprintln(tw, "   STREAM\tRECORDS\tGAPS\tCOVERED IN OUTAGE\tCOVERED NOW\tLAST GAP")
	now, err := d.mark(ctx)
	if err != nil {
		return err
	}
	for _, st := range streams {
		then, err := storage.CoverageAt(ctx, d.j.Store(), st.StreamID, inOutage)
		if err != nil {
			return err
		}
		cur, err := storage.CoverageAt(ctx, d.j.Store(), st.StreamID, now)
		if err != nil {
			return err
		}
		gap := "-"
		page, err := d.j.Store().Records(ctx, storage.Query{StreamID: st.StreamID, Types: []event.RecordType{event.TypeGap}, Descending: true, Limit: 1})
		if err != nil {
			return err
		}
		if len(page.Records) > 0 && page.Records[0].Gap != nil {
			g := page.Records[0].Gap
			gap = fmt.Sprintf("%s → %s: %s", d.rel(g.From), d.rel(g.To), truncate(g.Reason, 60))
		}
		res.Gaps += st.Gaps
		fmt.Fprintf(tw, "   %s\t%d\t%d\t%s\t%s\t%s\n", d.stream(st.StreamID), st.Records, st.Gaps, yesNo(then.Covered), yesNo(cur.Covered), gap)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	d.say("A gap starts at the stream's last durable record, not when the loss was noticed:")
	d.say("a quiet stream is uncertain from its last record on. Coverage returns with the relist.")
	return nil
}

// timeline prints the history of Deployment web with who changed what.
func (d *demo) timeline(ctx context.Context, res *result) error {
	d.section("Timeline of Deployment %s/web (who comes from the audit log)", shop)
	h, err := d.j.History(ctx, d.objectID(deployGVR, "web"))
	if err != nil {
		return err
	}
	tw := d.table()
	fmt.Fprintln(tw, "   OBSERVED\tEVENT\tFROM\tWHO\tCHANGES")
	for _, e := range h.Entries {
		switch {
		case e.Gap != nil:
			fmt.Fprintf(tw, "   %s\tGAP\t\t\tchanges between %s and the relist may be missing (%s)\n", d.rel(e.ObservedAt), d.rel(e.Gap.From), truncate(e.Gap.Reason, 50))
		case e.Confirmation != nil:
			fmt.Fprintf(tw, "   %s\tCONFIRMED\tbaseline\t\tconfirmed by relist: unchanged since resourceVersion %s\n", d.rel(e.ObservedAt), e.Confirmation.ResourceVersion)
		case e.Version != nil:
			v := e.Version
			who := "?"
			if len(v.Provenance) > 0 {
				p := v.Provenance[0]
				who = fmt.Sprintf("%s (%s", p.User, p.Verb)
				if p.Confidence < 1 {
					who += fmt.Sprintf(", %.0f%% sure", p.Confidence*100)
				}
				who += ")"
				res.WebAuthors = append(res.WebAuthors, p.User)
			} else {
				res.WebAuthors = append(res.WebAuthors, "")
			}
			if v.Origin != materialize.OriginWatch {
				who = "(" + string(v.Origin) + ")"
			}
			changes := describeChanges(v.Changes)
			if v.Origin == materialize.OriginBaseline && len(v.Changes) > 0 {
				changes += "  ← seen only by the relist"
			}
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\n", d.rel(v.ObservedAt), v.WatchType, v.Origin, who, changes)
		}
	}
	return tw.Flush()
}

func (d *demo) diff(ctx context.Context, res *result, from, to time.Time) error {
	d.section("Diff of %q between %s (after setup) and %s (the end), spec only", shop, d.rel(from), d.rel(to))
	df, err := d.j.Diff(ctx, krply.Namespaces(res.ClusterID, shop), from, to)
	if err != nil {
		return err
	}
	for _, od := range df.Objects {
		res.DiffObjects = append(res.DiffObjects, fmt.Sprintf("%s/%s %s", od.Kind, od.ID.Name, od.Type))
	}
	if err := df.WriteTable(indent{d.out}); err != nil {
		return err
	}
	return nil
}

func (d *demo) snapshots(ctx context.Context, res *result, inOutage, end time.Time) error {
	scope := krply.Namespaces(res.ClusterID, shop)
	d.section("Snapshot of %q during the outage (%s)", shop, d.rel(inOutage))
	s, err := d.j.Snapshot(ctx, scope, inOutage)
	if err != nil {
		return err
	}
	res.OutageComplete, res.OutageMissing = s.Complete, len(s.Missing)
	d.printSnapshot(s)

	d.section("Snapshot of %q at the end (%s)", shop, d.rel(end))
	if s, err = d.j.Snapshot(ctx, scope, end); err != nil {
		return err
	}
	res.FinalComplete = s.Complete
	d.printSnapshot(s)
	return nil
}

func (d *demo) printSnapshot(s *materialize.Snapshot) {
	d.say("complete: %s   (%d streams, %d missing)", yesNo(s.Complete), len(s.Watermarks), len(s.Missing))
	for _, m := range s.Missing {
		d.say("  missing %s: %s", d.stream(m.StreamID), truncate(m.Reason, 90))
	}
	tw := d.table()
	fmt.Fprintln(tw, "   KIND\tNAME\tOBSERVED\tFROM")
	for _, o := range s.Objects {
		from := "watch"
		if o.Synthetic {
			from = "baseline"
		}
		fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\n", o.Ref.Kind, o.Ref.Name, d.rel(o.ObservedAt), from)
	}
	_ = tw.Flush()
}

func (d *demo) replay(ctx context.Context, res *result, target *rest.Config, inOutage, end time.Time) error {
	d.section("Replay: a plan for %q as it was during the outage", shop)
	_, err := d.j.Plan(ctx, krply.Source{ClusterID: res.ClusterID, Namespaces: []string{shop}, At: inOutage},
		krply.Target{Namespaces: map[string]string{shop: sandbox}})
	var incomplete *replay.CoverageIncompleteError
	if errors.As(err, &incomplete) {
		res.PlanRefused = true
		d.say("refused, as it must be: the history of %q is incomplete then", shop)
		for _, m := range incomplete.Missing {
			d.say("  missing %s: %s", d.stream(m.StreamID), truncate(m.Reason, 90))
		}
	} else if err != nil {
		return err
	} else {
		d.say("NOT refused — the journal claims coverage it does not have")
	}

	d.section("Replay: a plan for %q as it is at the end, into %q", shop, sandbox)
	plan, err := d.j.Plan(ctx, krply.Source{ClusterID: res.ClusterID, Namespaces: []string{shop}, At: end},
		krply.Target{Namespaces: map[string]string{shop: sandbox}})
	if err != nil {
		return err
	}
	d.say("plan %s, %s, coverage complete: %s", plan.ID, plan.Hash[:19]+"…", yesNo(plan.Coverage.Complete))
	d.say("(this demo has a single cluster, so its policy allows the source cluster — into another namespace)")
	tw := d.table()
	fmt.Fprintln(tw, "   ORDER\tKIND\tNAME\tREMOVED FIELDS")
	for i, o := range plan.Objects {
		res.Planned = append(res.Planned, o.Ref.Kind+"/"+o.Ref.Name)
		fmt.Fprintf(tw, "   %d\t%s\t%s\t%s\n", i+1, o.Ref.Kind, objName(o.Ref), truncate(strings.Join(o.Removed, " "), 70))
	}
	_ = tw.Flush()
	for _, e := range plan.Exclusions {
		res.Excluded = append(res.Excluded, e.Ref.Kind+"/"+e.Ref.Name+": "+string(e.Rule))
		// The reason names the Policy field that would opt in; the demo
		// keeps its own policy, so it says only why.
		reason, _, _ := strings.Cut(e.Reason, " (opt in with ")
		d.say("excluded %s %s: %s", e.Ref.Kind, e.Ref.Name, reason)
	}
	// Planning only read the journal; the reviewed plan is saved explicitly,
	// and only a saved plan is dry-run and applied.
	if err := d.j.SavePlan(ctx, plan); err != nil {
		return err
	}
	d.say("plan %s saved in the journal", plan.ID)

	cluster, err := replay.NewClusterForConfig(target)
	if err != nil {
		return err
	}
	d.section("Replay: server-side dry run (dryRun=All, never forced)")
	report, err := d.j.DryRun(ctx, plan, cluster)
	if err != nil {
		return err
	}
	res.DryRun = report.Status
	for _, r := range report.Results {
		note := ""
		if r.MissingNamespace != "" {
			note = "namespace " + r.MissingNamespace + " does not exist yet (the plan creates it)"
		}
		if r.Message != "" {
			note = truncate(r.Message, 80)
		}
		d.say("%-13s %-10s %-14s %s", r.Action, r.Ref.Kind, objName(r.Ref), note)
	}
	d.say("status: %s (%s)", report.Status, report.Summary())

	d.section("Replay: apply, confirmed by plan ID and hash")
	applied, err := d.j.Apply(ctx, plan, cluster, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if applied != nil {
		for _, r := range applied.Results {
			res.Applied[r.Ref.Kind+"/"+r.Ref.Name] = r.Outcome
			d.say("%-10s %-10s %s %s", r.Outcome, r.Ref.Kind, objName(r.Ref), r.Message)
		}
		d.say("status: %s, as field manager %s (nothing forced, nothing deleted)", applied.Status, applied.FieldManager)
	}
	if err != nil {
		return err
	}
	for _, gvr := range []schema.GroupVersionResource{deployGVR, configMapsGVR, servicesGVR} {
		list, err := d.users[testenv.UserAdmin].Resource(gvr).Namespace(sandbox).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, it := range list.Items {
			res.SandboxObjects = append(res.SandboxObjects, it.GetKind()+"/"+it.GetName())
		}
	}
	slices.Sort(res.SandboxObjects)
	d.say("now in %s: %s", sandbox, strings.Join(res.SandboxObjects, ", "))
	return nil
}

func objName(r event.ResourceRef) string { return r.ObjectKey() }

// describeChanges renders field changes on one line:
// "spec.replicas: 1 → 3; data.key = v; metadata.labels removed".
func describeChanges(changes []materialize.FieldChange) string {
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		switch c.Op {
		case materialize.OpAdd:
			parts = append(parts, fmt.Sprintf("%s = %v", c.Path, c.After))
		case materialize.OpRemove:
			parts = append(parts, c.Path+" removed")
		default:
			parts = append(parts, fmt.Sprintf("%s: %v → %v", c.Path, c.Before, c.After))
		}
	}
	return truncate(strings.Join(parts, "; "), 100)
}

func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// indent prefixes every line written with three spaces.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("   " + l)
		}
	}
	if _, err := io.WriteString(i.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
