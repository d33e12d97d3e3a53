package truth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// queryEnv names the file that configures a child process querying the
// journal while it is recorded (see runQuery).
const queryEnv = "KRPLY_TRUTH_QUERY"

// queryConfig is what a querying child needs.
type queryConfig struct {
	Name       string                 `json:"name"`
	Journal    string                 `json:"journal"`
	Namespaces []string               `json:"namespaces"`
	Resources  []schema.GroupResource `json:"resources"`
	AuditLog   string                 `json:"auditLog"`
	Seed       int64                  `json:"seed"`
	// Report is the file the child writes a queryLine to for every act.
	Report string `json:"report"`
}

// queryLine is one act of a querying child: a snapshot or plan saved (or
// previewed), ObjectAt answers got, an audit log ingested, or an error.
type queryLine struct {
	Saved   *Saved         `json:"saved,omitempty"`
	Answers []Answer       `json:"answers,omitempty"`
	Audit   *audit.Summary `json:"audit,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// The acts of a querying child, and how often it ingests the audit log.
const (
	queryPause       = 300 * time.Millisecond
	queryAuditPeriod = 4 * time.Second
	// queryLookBack bounds how far before now a query asks about: close
	// to the recording's edge, where coverage is decided.
	queryLookBack = 8 * time.Second
	// queryAnswers is how many ObjectAt answers one act asks for.
	queryAnswers = 10
)

// runQuery opens the journal another process records into and, until it
// gets SIGTERM, saves snapshots of times around now, makes and saves replay
// plans, and ingests the API server's audit log, reporting each act. It
// returns 1 when an act failed.
func runQuery(b Backend, configPath string) int {
	var cfg queryConfig
	if err := readConfig(configPath, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out, err := os.Create(cfg.Report)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	failed := false
	report := func(l queryLine) {
		if l.Error != "" {
			failed = true
		}
		if err := enc.Encode(l); err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	st, err := b.Open(ctx, cfg.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	q := &querier{cfg: cfg, rnd: rand.New(rand.NewSource(cfg.Seed)), st: st}
	if q.mat, err = materialize.New(st); err == nil {
		q.planner, err = replay.NewPlanner(st, replay.WithPolicy(replay.Policy{AllowGaps: true}))
	}
	if err == nil {
		q.correlator, err = audit.NewCorrelator(st, clusterID)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("opened")
	acts := newActs(q.rnd, time.Now())
	for ctx.Err() == nil {
		var l queryLine
		var err error
		switch acts.next(time.Now()) {
		case actIngest:
			l.Audit, err = q.ingest(ctx)
			acts.ingested(time.Now())
		case actPlan:
			l.Saved, err = q.plan(ctx)
		case actAnswers:
			l.Answers, err = q.answers(ctx)
		default:
			l.Saved, err = q.snapshot(ctx)
		}
		if ctx.Err() != nil {
			break // stopped in the middle of an act: not a failure
		}
		if err != nil {
			l.Error = err.Error()
		}
		report(l)
		select {
		case <-ctx.Done():
		case <-time.After(queryPause/2 + time.Duration(q.rnd.Int63n(int64(queryPause)))):
		}
	}
	if failed {
		return 1
	}
	return 0
}

// The acts of a querying child.
const (
	actPlan = iota
	actAnswers
	actSnapshot
	actSnapshot2
	actIngest
)

// acts decides a querying child's next act. The acts other than the audit
// ingest come in rounds of four in a random order (a plan, ObjectAt
// answers, two snapshots), the first round in that order, so that a run
// slowed down by a busy machine still makes each of them at least once;
// an ingest comes queryAuditPeriod after the previous one ended, never
// twice in a row: an ingest slower than the period (a long audit log on a
// busy machine) does not starve the other acts.
type acts struct {
	rnd       *rand.Rand
	round     []int
	lastAudit time.Time
	ingest    bool // the previous act was an ingest
}

func newActs(rnd *rand.Rand, now time.Time) *acts {
	return &acts{rnd: rnd, round: []int{actPlan, actAnswers, actSnapshot, actSnapshot2}, lastAudit: now}
}

// next is the act to make at now.
func (a *acts) next(now time.Time) int {
	if !a.ingest && now.Sub(a.lastAudit) > queryAuditPeriod {
		a.ingest = true
		return actIngest
	}
	a.ingest = false
	if len(a.round) == 0 {
		a.round = a.rnd.Perm(4)
	}
	n := a.round[0]
	a.round = a.round[1:]
	return n
}

// ingested notes that an ingest ended at now.
func (a *acts) ingested(now time.Time) { a.lastAudit = now }

// querier makes the acts of a querying child.
type querier struct {
	cfg        queryConfig
	rnd        *rand.Rand
	st         storage.Reader
	mat        *materialize.Materializer
	planner    *replay.Planner
	correlator *audit.Correlator
	plans      int // plans made
}

// when is a time to ask about: now, or a moment before.
func (q *querier) when() time.Time {
	now := time.Now()
	if q.rnd.Intn(3) == 0 {
		return now
	}
	return now.Add(-time.Duration(q.rnd.Int63n(int64(queryLookBack))))
}

// snapshot saves a snapshot of the whole scope, or of one namespace.
func (q *querier) snapshot(ctx context.Context) (*Saved, error) {
	scope := materialize.Scope{ClusterID: clusterID, Namespaces: q.cfg.Namespaces, Resources: q.cfg.Resources}
	if q.rnd.Intn(2) == 0 {
		scope.Namespaces = []string{q.cfg.Namespaces[q.rnd.Intn(len(q.cfg.Namespaces))]}
	}
	at := q.when()
	snap, err := q.mat.Snapshot(ctx, scope, at)
	if err != nil {
		return nil, fmt.Errorf("snapshot at %s: %w", stamp(at), err)
	}
	if err := q.mat.SaveSnapshot(ctx, snap, "truth query "+q.cfg.Name); err != nil {
		return nil, fmt.Errorf("save the snapshot at %s: %w", stamp(at), err)
	}
	return &Saved{Kind: SavedSnapshot, By: q.cfg.Name, ID: snap.ID, At: snap.At, Complete: snap.Complete, Objects: len(snap.Objects)}, nil
}

// answers asks ObjectAt about objects of the latest changes the journal
// holds (those a change appended meanwhile likeliest concerns), half the
// time at now, else at or a moment before the change: a time its stream's
// evidence covers however far the recording trails the server (on a busy
// machine, further than a fixed look-back from now).
func (q *querier) answers(ctx context.Context) ([]Answer, error) {
	page, err := q.st.Records(ctx, storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypeEvent}, Descending: true, Limit: 50, WithoutBodies: true})
	if err != nil {
		return nil, fmt.Errorf("the latest changes: %w", err)
	}
	var changes []event.Record
	for _, rec := range page.Records {
		if rec.Resource.Name != "" {
			changes = append(changes, rec)
		}
	}
	if len(changes) == 0 {
		return nil, nil
	}
	out := make([]Answer, 0, queryAnswers)
	for range queryAnswers {
		change := changes[q.rnd.Intn(len(changes))]
		obj := storage.ObjectIDOf(change)
		at := time.Now()
		if q.rnd.Intn(2) == 0 {
			// At the change, or a moment before it.
			at = change.ObservedAt
			if q.rnd.Intn(2) == 0 {
				at = at.Add(-time.Duration(1 + q.rnd.Int63n(int64(queryLookBack))))
			}
		}
		st, err := q.mat.ObjectAt(ctx, obj, at)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", objectKey(obj), stamp(at), err)
		}
		out = append(out, answerOf(q.cfg.Name, obj, at, st))
	}
	return out, nil
}

// plan makes a replay plan of one namespace into a copy of it, and saves
// it, or, every third time, leaves it a preview.
func (q *querier) plan(ctx context.Context) (*Saved, error) {
	ns := q.cfg.Namespaces[q.rnd.Intn(len(q.cfg.Namespaces))]
	at := q.when()
	plan, err := q.planner.Plan(ctx, replay.Source{ClusterID: clusterID, Namespaces: []string{ns}, At: at},
		replay.Target{Namespaces: map[string]string{ns: ns + "-copy"}})
	if err != nil {
		return nil, fmt.Errorf("plan of %s at %s: %w", ns, stamp(at), err)
	}
	// One plan in three stays a preview, never the first: a run slowed
	// down by a busy machine still saves some.
	q.plans++
	preview := q.plans%3 == 0
	if !preview {
		if err := q.planner.SavePlan(ctx, plan); err != nil {
			return nil, fmt.Errorf("save the plan of %s at %s: %w", ns, stamp(at), err)
		}
	}
	return &Saved{Kind: SavedPlan, By: q.cfg.Name, ID: plan.ID, At: plan.Source.At, Complete: plan.Coverage.Complete,
		Objects: len(plan.Objects), Hash: plan.Hash, Preview: preview}, nil
}

// ingest ingests the audit log as far as it is written.
func (q *querier) ingest(ctx context.Context) (*audit.Summary, error) {
	src, err := audit.OpenFiles([]string{q.cfg.AuditLog})
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer src.Close()
	sum, err := q.correlator.Ingest(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("ingest the audit log: %w", err)
	}
	return &sum, nil
}

// queryProcess is a querying child.
type queryProcess struct {
	name   string
	cmd    *exec.Cmd
	report string
}

// startQuery re-executes the test binary as a child that queries the
// journal until stop, and returns once it opened the journal.
func startQuery(ctx context.Context, cfg queryConfig, dir string, logs io.Writer) (*queryProcess, error) {
	cfg.Report = filepath.Join(dir, cfg.Name+".jsonl")
	cmd, err := reexec(ctx, queryEnv, cfg, filepath.Join(dir, cfg.Name+".json"), logs, "opened")
	if err != nil {
		return nil, fmt.Errorf("query process %s: %w", cfg.Name, err)
	}
	return &queryProcess{name: cfg.Name, cmd: cmd, report: cfg.Report}, nil
}

// queryResult is what a querying child did.
type queryResult struct {
	saved   []Saved
	answers []Answer
	audits  []audit.Summary
	errors  []string
}

// stop ends a querying child with SIGTERM and reads its report. An error
// means the child failed (an act failed, or it exited by itself).
func (p *queryProcess) stop() (queryResult, error) {
	var res queryResult
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return res, fmt.Errorf("query process %s: %w", p.name, err)
	}
	waitErr := p.cmd.Wait()
	f, err := os.Open(p.report)
	if err != nil {
		return res, fmt.Errorf("query process %s: %w", p.name, err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		var l queryLine
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			return res, fmt.Errorf("query process %s: report: %w", p.name, err)
		}
		switch {
		case l.Error != "":
			res.errors = append(res.errors, l.Error)
		case l.Saved != nil:
			res.saved = append(res.saved, *l.Saved)
		case len(l.Answers) > 0:
			res.answers = append(res.answers, l.Answers...)
		case l.Audit != nil:
			res.audits = append(res.audits, *l.Audit)
		}
	}
	if waitErr != nil {
		return res, fmt.Errorf("query process %s failed (%v): %d acts failed, e.g. %v", p.name, waitErr, len(res.errors), res.errors[:min(3, len(res.errors))])
	}
	return res, nil
}
