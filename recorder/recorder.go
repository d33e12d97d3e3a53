package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/watch"
)

// Config is what a recorder is asked to do. The comments name the flags
// of `kubectl krply record` that set each field.
type Config struct {
	// Cluster returns the cluster to record (--kubeconfig, --context); it
	// is not called with ServeOnly.
	Cluster func() (*rest.Config, error)
	// Journal names the journal (--journal): a SQLite file's path, or
	// whatever Open accepts.
	Journal string
	// Open opens Journal, read-only with ServeOnly; closeJournal releases
	// it. The default, OpenFile, opens a SQLite file; the plugin's also
	// takes a PostgreSQL connection string (its own module: the core
	// module does not depend on the driver).
	Open func(ctx context.Context, journal string, readOnly bool, opts ...krply.Option) (j *krply.Journal, closeJournal func() error, err error)
	// Resources to record (--resource; default DefaultResources).
	Resources []string
	// Namespaces to record (-n; default all).
	Namespaces []string
	// LabelSelector records only the objects it matches (-l).
	LabelSelector string
	// ClusterID is written in every record (--cluster-id; default the UID
	// of kube-system).
	ClusterID string
	// StatusEvery is how often the streams' status is printed once synced
	// (--status-every; 0: never).
	StatusEvery time.Duration
	// Log receives the recorder's logs (-v sets its verbosity).
	Log logr.Logger

	// AllResources records every listable and watchable resource, except
	// the default exclusions (--all-resources) but Events, which the
	// recorder records; Exclude adds to them (--exclude; "events" leaves
	// Events out), Include takes some back (--include).
	AllResources     bool
	Exclude, Include []string
	// AllowSecrets records Secrets, values redacted (--allow-secrets).
	AllowSecrets bool
	// RecordRule records only the objects it matches (--rule, a CEL
	// expression the plugin compiles with
	// github.com/krply/krply/cel.CompileRule); see watch.WithRecordRule.
	RecordRule watch.RecordRule

	// Retention compacts history older than this (--retention); MaxSize
	// compacts the oldest history while the journal's data takes more
	// (--max-size), never history younger than MinAge (--min-age);
	// DiskReserve reports pressure while the journal's disk has less free
	// space (--disk-reserve); RetentionEvery is how often retention runs
	// (--retention-every; the flags' defaults are retention.DefaultMinAge
	// and retention.DefaultInterval, and RetentionEvery must be positive
	// when retention runs).
	Retention, MinAge, RetentionEvery Age
	// EventsRetention compacts the Kubernetes Events (core and
	// events.k8s.io) older than this, whatever Retention keeps
	// (--events-retention; the flag's default is DefaultEventsRetention),
	// so that their volume cannot crowd out object history; 0 keeps them
	// as long as the rest.
	EventsRetention      Age
	MaxSize, DiskReserve Quantity
	// MetricsAddr serves /metrics, /healthz and /readyz alone on this
	// address (--metrics-addr), without authentication: an internal
	// address, for in-pod scrapes.
	MetricsAddr string

	// Listen serves the query API, /metrics (behind the API's
	// authentication), /healthz and /readyz on this address (--listen), over HTTPS with TLSCertFile and TLSKeyFile
	// (--tls-cert-file, --tls-key-file; read again when they change).
	// TokenFile lists the bearer tokens
	// it accepts (--listen-token-file); DelegatedAuth asks the cluster
	// instead (--delegated-auth); AllowWrites lets clients save snapshots
	// and plans (--listen-allow-writes); UI serves the web UI at the root
	// (--ui; package server/ui), with the API's authentication.
	Listen, TLSCertFile, TLSKeyFile, TokenFile string
	DelegatedAuth, AllowWrites, UI             bool
	// Serve, when set, returns the handler served on Listen in place of
	// the query API's own, given that handler (which still does all the
	// authentication and authorization): the plugin serves MCP beside the
	// API this way (kubectl krply record --listen), without the core
	// module depending on an MCP library.
	Serve func(api http.Handler) (http.Handler, error)
	// ServeOnly serves the journal read-only without recording
	// (--serve-only).
	ServeOnly bool
	// Conditions compiles the conditions of the query API's find route
	// (server.WithConditions); the plugin gives CEL's (module
	// github.com/krply/krply/cel). Without it the route answers 501.
	Conditions materialize.Conditions

	// MetricsHandler, when set, makes the handler of /metrics (on
	// MetricsAddr and on Listen) from krply's metrics: the plugin's
	// record command serves them through the Prometheus client library,
	// with the Go runtime's and the process's metrics beside them. By
	// default krply's are served alone, by package metrics.
	MetricsHandler func(*metrics.Handler) (http.Handler, error)
	// MigrationProgress, when set, is called while Run migrates an older
	// SQLite journal's schema (sqlite.WithMigrationProgress), from another
	// goroutine: the source of a metric of it. It must not block. The
	// recorder also logs the progress and shows it in /readyz's journal
	// check.
	MigrationProgress func(sqlite.MigrationProgress)
}

// Run records until ctx ends, printing its progress and status lines on
// out; with ServeOnly it serves the journal until ctx ends. It returns nil
// when ctx ends, also before the first sync.
func Run(ctx context.Context, out io.Writer, c Config) error {
	if err := c.Check(); err != nil {
		return err
	}
	if c.ServeOnly {
		return serveOnly(ctx, out, c)
	}
	err := record(ctx, out, c)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Ctrl-C is how a recorder is stopped, also before its first sync.
		fmt.Fprintln(out, "stopped before every stream had its first complete list; the journal keeps what was recorded")
		return nil
	}
	return err
}

func record(ctx context.Context, out io.Writer, c Config) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if c.Cluster == nil {
		return errors.New("no cluster to record: choose it with --kubeconfig and --context")
	}
	cfg, err := c.Cluster()
	if err != nil {
		return fmt.Errorf("cluster to record: %w (choose it with --kubeconfig and --context)", err)
	}
	if err := c.check(ctx, cfg); err != nil {
		return err
	}
	// /livez and /readyz answer before the journal opens: a migration of
	// an older journal may take minutes.
	h := newHealth(false)
	e, err := startEndpoints(ctx, c, h)
	if err != nil {
		return err
	}
	defer e.shutdown()
	opts := c.options()
	if !isURL(c.Journal) {
		opts = append(opts, krply.WithSQLiteOptions(sqlite.WithMigrationProgress(func(p sqlite.MigrationProgress) {
			h.migrating(p)
			if c.MigrationProgress != nil {
				c.MigrationProgress(p)
			}
		})))
	}
	j, closeJournal, err := c.open(ctx, false, opts...)
	if err != nil {
		return flagError(err)
	}
	h.opened(j)
	// The latency histograms of the Collector and the query API.
	hs := metrics.NewHistograms()
	rec, err := j.NewCollectorForConfig(cfg, watch.WithMetrics(hs))
	if err != nil {
		return errors.Join(err, closeJournal())
	}
	done := make(chan error, 1)
	go func() { done <- flagError(rec.Start(ctx)) }()
	o, err := startOps(ctx, c, j, rec, hs)
	if err != nil {
		stop()
		return errors.Join(err, <-done, closeJournal())
	}
	h.recording(rec, o.keeper)
	defer func() {
		// The servers stop, then retention, before the journal closes.
		stop()
		e.shutdown()
		o.wait()
		closeJournal()
	}()
	if err := e.serveAPI(out, c, j, cfg, rec, o.metrics, hs); err != nil {
		stop()
		<-done
		return err
	}

	// Progress while the initial lists run, then the streams' status.
	fmt.Fprintf(out, "recording %s into %s (Ctrl-C to stop)\n", cfg.Host, Redacted(c.Journal))
	synced := make(chan error, 1)
	go func() { synced <- rec.WaitForSync(ctx) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-synced:
			if err != nil {
				stop()
				if startErr := <-done; startErr != nil && !errors.Is(startErr, context.Canceled) {
					return startErr
				}
				return err
			}
			waiting = false
		case <-tick.C:
			printProgress(out, rec.Status())
		}
	}
	fmt.Fprintf(out, "synced: every stream has a complete baseline (cluster %s)\n", rec.ClusterID())
	printStreams(out, watchesOpened(ctx, rec))
	printChecks(out, h)

	var status <-chan time.Time
	if c.StatusEvery > 0 {
		t := time.NewTicker(c.StatusEvery)
		defer t.Stop()
		status = t.C
	}
	for {
		select {
		case err := <-done:
			stop()
			e.shutdown() // the API stops with ctx, before the journal closes
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			fmt.Fprintln(out, "stopped; final status:")
			printStreams(out, rec.Status())
			return nil
		case <-status:
			printStreams(out, rec.Status())
			printChecks(out, h)
		case err := <-e.stopped:
			stop()
			<-done
			return err
		}
	}
}

// isURL tells whether journal is a URL (a database's connection string)
// rather than a SQLite file's path.
func isURL(journal string) bool {
	u, err := url.Parse(journal)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// open opens the journal with Open, or OpenFile.
func (c *Config) open(ctx context.Context, readOnly bool, opts ...krply.Option) (*krply.Journal, func() error, error) {
	open := c.Open
	if open == nil {
		open = OpenFile
	}
	j, closeJournal, err := open(ctx, c.Journal, readOnly, opts...)
	if err != nil {
		return nil, nil, JournalError(c.Journal, err)
	}
	return j, closeJournal, nil
}

// JournalError words err, which opening journal (a --journal) returned,
// for the command line: the journal named once, what to do in flags
// rather than Go options. It wraps err.
func JournalError(journal string, err error) error {
	name := Redacted(journal)
	var inc *sqlite.IncompatibleError
	var ro *sqlite.ReadOnlyError
	var msg string
	switch {
	case errors.As(err, &inc):
		msg = fmt.Sprintf("journal %s cannot be opened: %s", name, inc.Reason)
		if inc.Err != nil {
			msg += ": " + inc.Err.Error()
		}
	case errors.As(err, &ro):
		what := "it"
		if ro.Cannot != ro.Path {
			what = ro.Cannot
		}
		msg = fmt.Sprintf("journal %s: this user cannot write %s (%v): fix the permissions, or give --journal a file this user may write", name, what, ro.Err)
	case errors.Is(err, fs.ErrNotExist):
		msg = fmt.Sprintf("journal %s does not exist", name)
	case strings.Contains(err.Error(), name):
		msg = "journal: " + err.Error()
	default:
		msg = fmt.Sprintf("journal %s: %v", name, err)
	}
	return &cliError{msg: msg, err: err}
}

// cliError is an error of JournalError and flagError: its own
// message, in the command line's words, wrapping the library's error.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// OlderJournal returns why err refused a SQLite journal whose schema
// version is older than this build's (which a read-only open does not
// migrate); false for any other error.
func OlderJournal(err error) (*sqlite.IncompatibleError, bool) {
	var inc *sqlite.IncompatibleError
	if errors.As(err, &inc) && inc.FileVersion >= 1 && inc.FileVersion < inc.SupportedVersion {
		return inc, true
	}
	return nil, false
}

// OpenFile opens the SQLite journal at path (krply.Open), read-only when
// readOnly, which needs the file to exist.
func OpenFile(ctx context.Context, path string, readOnly bool, opts ...krply.Option) (*krply.Journal, func() error, error) {
	if readOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, nil, err
		}
		opts = append(opts, krply.WithReadOnly())
	}
	j, err := krply.Open(ctx, path, opts...)
	if err != nil {
		return nil, nil, err
	}
	return j, j.Close, nil
}

// Redacted returns journal as it may be printed: a connection URL with
// its password replaced by "xxxxx"; anything else unchanged.
func Redacted(journal string) string {
	if u, err := url.Parse(journal); err == nil && u.Scheme != "" && u.User != nil {
		return u.Redacted()
	}
	return journal
}

// check refuses, before the journal is created, what the Collector would
// refuse: a resource the cluster does not serve, Secrets without
// --allow-secrets. A cluster that cannot be asked yet is no refusal: the
// Collector retries until it answers.
func (c *Config) check(ctx context.Context, cfg *rest.Config) error {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cluster to record: %w", err)
	}
	err = watch.Check(ctx, disc, c.collectorOptions()...)
	if errors.Is(err, watch.ErrInvalidArgument) || errors.Is(err, watch.ErrUnknownResource) || errors.Is(err, watch.ErrSecretsNotAllowed) {
		return flagError(err)
	}
	if err != nil {
		c.Log.V(1).Info("could not check the resources before recording; the recorder checks them once the cluster answers", "error", err.Error())
	}
	return nil
}

// flagError words the Collector's refusals of the configuration in flags.
func flagError(err error) error {
	var unknown *watch.UnknownResourceError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &unknown):
		msg := fmt.Sprintf("--resource %s: the cluster serves no such resource", unknown.Spec)
		if len(unknown.Suggestions) > 0 {
			msg += "; did you mean " + strings.Join(unknown.Suggestions, ", ") + "?"
		}
		return &cliError{msg: msg, err: err}
	case errors.Is(err, watch.ErrSecretsNotAllowed):
		return &cliError{msg: "recording Secrets needs --allow-secrets (their values are redacted, and reading them needs RBAC on secrets)", err: err}
	}
	return err
}

// DefaultEventsRetention is how long --events-retention keeps Kubernetes
// Events by default: long enough to ask why something broke last week,
// short enough that Events, which outnumber object changes in a busy
// cluster, do not crowd out object history.
const DefaultEventsRetention = 7 * 24 * time.Hour

// EventResources are the resources of Kubernetes Events, which the
// recorder records (DefaultResources, and AllResources though watch
// excludes them by default) and EventsRetention compacts.
func EventResources() []string { return []string{"events", "events.events.k8s.io"} }

// DefaultResources are the resources the recorder records without
// Resources or AllResources: watch.DefaultResources and Kubernetes Events,
// which explain what the objects' history shows (kubectl krply why reads
// them).
func DefaultResources() []string { return append(watch.DefaultResources(), "events") }

// options returns the journal's and the Collector's options the Config
// asks for.
func (c *Config) options() []krply.Option {
	return []krply.Option{krply.WithLogger(c.Log), krply.WithCollectorOptions(c.collectorOptions()...)}
}

// collectorOptions returns the Collector's options the Config asks for.
func (c *Config) collectorOptions() []watch.Option {
	var w []watch.Option
	switch {
	case len(c.Resources) > 0:
		w = append(w, watch.WithResources(c.Resources...))
	case !c.AllResources:
		w = append(w, watch.WithResources(DefaultResources()...))
	}
	if len(c.Namespaces) > 0 {
		w = append(w, watch.WithNamespaces(c.Namespaces...))
	}
	if c.ClusterID != "" {
		w = append(w, watch.WithClusterID(c.ClusterID))
	}
	if c.LabelSelector != "" {
		w = append(w, watch.WithLabelSelector(c.LabelSelector))
	}
	if c.AllResources {
		w = append(w, watch.WithAllResources())
	}
	if len(c.Exclude) > 0 {
		w = append(w, watch.WithExclude(c.Exclude...))
	}
	if c.AllResources {
		// Events too (--exclude events still leaves them out).
		w = append(w, watch.WithInclude(append(slices.Clone(c.Include), "events")...))
	} else if len(c.Include) > 0 {
		w = append(w, watch.WithInclude(c.Include...))
	}
	if c.AllowSecrets {
		w = append(w, watch.AllowSecrets())
	}
	if c.RecordRule != nil {
		w = append(w, watch.WithRecordRule(c.RecordRule))
	}
	return w
}

// watchOpenLimit bounds how long the status printed at the sync waits
// for the streams' watches to open.
const watchOpenLimit = 5 * time.Second

// watchesOpened returns the streams' status once no synced stream is
// still listing: a stream is synced at the end of its baseline and opens
// its watch a moment later (watch.Collector.WaitForSync), and the status
// printed under "synced:" shows what the recorder does from then on. It
// waits up to watchOpenLimit (a stream may be relisting already), and
// returns the status as it is when ctx ends.
func watchesOpened(ctx context.Context, rec *krply.Collector) []watch.StreamStatus {
	deadline := time.Now().Add(watchOpenLimit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		streams := rec.Status()
		listing := slices.ContainsFunc(streams, func(st watch.StreamStatus) bool { return st.Synced && st.State == watch.StateListing })
		if !listing || time.Now().After(deadline) {
			return streams
		}
		select {
		case <-ctx.Done():
			return streams
		case <-tick.C:
		}
	}
}

// printProgress prints the streams still taking their first baseline.
func printProgress(out io.Writer, streams []watch.StreamStatus) {
	var listing []string
	for _, st := range streams {
		if !st.Synced && st.State != watch.StatePending {
			listing = append(listing, fmt.Sprintf("%s %s (%d objects)", st.Resource, st.State, st.Events))
		}
	}
	if len(listing) > 0 {
		fmt.Fprintf(out, "  initial lists: %s\n", strings.Join(listing, ", "))
	}
}

// printStreams prints one line per stream: state, coverage, evidence,
// events, gaps, last resourceVersion, why degraded. Times are RFC 3339 with
// the zone and full precision, so they can be pasted back as --at.
func printStreams(out io.Writer, streams []watch.StreamStatus) {
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "  STREAM\tSTATE\tCOVERED SINCE\tEVIDENCE UNTIL\tEVENTS\tGAPS\tRESOURCEVERSION\tDEGRADED")
	for _, st := range streams {
		covered := "NOT covered"
		if st.Covered {
			covered = stamp(st.CoveredSince)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", st.StreamID, st.State, covered, stamp(st.LastDurableAt), st.Events, st.Gaps, orNone(st.LastResourceVersion), orNone(st.DegradedReason))
	}
	tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339Nano)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
