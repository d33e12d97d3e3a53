package main

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/crutil/prom"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/retention"
)

// recordFlags are record's flags: a recorder.Config and what the command
// line adds.
type recordFlags struct {
	recorder.Config
	all          bool
	rule         string
	verbosity    int
	logFormat    string
	printVersion bool
}

// register adds record's flags to f. Where a name of examples/record's
// clashes with the plugin's, the plugin's wins: --journal (not --store),
// -n a,b (not --namespace repeated), --listen-token-file (--token-file is
// the client's token for --server).
func (r *recordFlags) register(f *pflag.FlagSet) {
	c := &r.Config
	f.StringSliceVar(&c.Resources, "resource", nil, "resources to record, repeatable or comma-separated: short names (deploy, cm, svc, sts), plurals, resource.group (default: "+strings.Join(recorder.DefaultResources(), ",")+")")
	f.BoolVarP(&r.all, "all-namespaces", "A", false, "record every namespace (the default without -n)")
	f.StringVarP(&c.LabelSelector, "selector", "l", "", "record only objects with these labels (a label selector, e.g. app=web)")
	f.DurationVar(&c.StatusEvery, "status-every", 30*time.Second, "how often to print each stream's status once synced (0: never)")
	f.IntVarP(&r.verbosity, "v", "v", 0, "log verbosity on stderr (gaps, 410s and retries are logged at 0; 1 also each stream's state and each default exclusion with its reason)")
	f.StringVar(&r.logFormat, "log-format", "text", "the format of the log on stderr: text, or json (one object a line, for a log pipeline); client-go's own log lines take it too")
	f.BoolVar(&r.printVersion, "version", false, "print the version and exit")

	f.BoolVar(&c.AllResources, "all-resources", false, "record every listable and watchable resource, following CRDs as they come and go, Events included, except the default exclusions (Secrets, Leases, EndpointSlices, Endpoints)")
	f.StringSliceVar(&c.Exclude, "exclude", nil, "with --all-resources: also leave out these resources (resource or resource.group; events leaves Events out), repeatable or comma-separated")
	f.StringSliceVar(&c.Include, "include", nil, "with --all-resources: record these default exclusions after all (e.g. leases.coordination.k8s.io)")
	f.BoolVar(&c.AllowSecrets, "allow-secrets", false, "record Secrets (values redacted); needs RBAC on secrets")
	f.StringVar(&r.rule, "rule", "", "record only the objects this CEL expression over `object` is true for, e.g. '!has(object.metadata.labels.scratch)'; answers report the others as excluded by rule")

	c.MinAge, c.RetentionEvery = recorder.Age(retention.DefaultMinAge), recorder.Age(retention.DefaultInterval)
	c.EventsRetention = recorder.Age(recorder.DefaultEventsRetention)
	f.Var(&c.Retention, "retention", "compact history older than this (e.g. 7d, 36h; 0: keep everything)")
	f.Var(&c.EventsRetention, "events-retention", "compact Kubernetes Events older than this, whatever --retention keeps, so that they cannot crowd out object history (0: keep them as long as the rest)")
	f.Var(&c.MaxSize, "max-size", "compact the oldest history while the journal's data takes more than this (e.g. 4Gi; 0: no bound)")
	f.Var(&c.MinAge, "min-age", "history younger than this is never compacted for --max-size (e.g. 1h, 2d)")
	f.Var(&c.DiskReserve, "disk-reserve", "report pressure (not ready, krply_retention_pressure 1) while the journal's disk has less free space than this (e.g. 256Mi; 0: off)")
	f.Var(&c.RetentionEvery, "retention-every", "how often retention runs (e.g. 5m)")
	f.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics, /livez, /healthz and /readyz alone on this address, without authentication: keep it on an internal address (e.g. 127.0.0.1:9090 for in-pod scrapes; --listen serves them too, /metrics behind its authentication)")

	f.StringVar(&c.Listen, "listen", "", "serve the query API, MCP at /mcp and /metrics (with the API's authentication), /livez, /healthz and /readyz on this address (host:port), for kubectl krply --server and AI assistants")
	f.StringVar(&c.TLSCertFile, "tls-cert-file", "", "serve --listen over HTTPS with this certificate (PEM; with --tls-key-file)")
	f.StringVar(&c.TLSKeyFile, "tls-key-file", "", "the key of --tls-cert-file (PEM)")
	f.StringVar(&c.TokenFile, "listen-token-file", "", "bearer tokens the query API accepts, one per line, reread when the file changes")
	f.BoolVar(&c.DelegatedAuth, "delegated-auth", false, "authenticate the query API's bearer tokens by the cluster's TokenReview and authorize by SubjectAccessReview (get history.krply.io per namespace), with the recorder's credentials")
	f.BoolVar(&c.AllowWrites, "listen-allow-writes", false, "let query API clients save snapshots and replay plans in the journal")
	f.BoolVar(&c.UI, "ui", false, "serve the web UI at the root of --listen, with the query API's authentication")
	f.BoolVar(&c.ServeOnly, "serve-only", false, "do not record: serve the journal read-only on --listen (no cluster)")
}

func (e *env) recordCommand() *cobra.Command {
	var r recordFlags
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record a gap-aware history of the cluster's objects into the journal",
		Long: `record lists and watches the resources --resource names (or with
--all-resources every resource it may read) in the cluster --kubeconfig and
--context select, and writes every change into the journal (--journal: a
SQLite file, created if missing, or a PostgreSQL database, postgres://…) until it is stopped with Ctrl-C or SIGTERM. It prints
the initial lists' progress, one line per stream once every stream has a
complete baseline, and again every --status-every. Gaps, 410s and retries
are logged on stderr. In a pod, without a kubeconfig, it records the
cluster it runs in with its service account.

Without -n it records every namespace; -n takes one namespace or several
separated by commas. --rule records only the objects a CEL expression over
object is true for (docs/reference/expressions.md): answers about the
others say "excluded by rule", and a journal recorded under one rule is
never continued under another (a new rule starts new streams).

Running for months: --retention and --max-size keep the journal on a
bounded disk (--min-age, --retention-every, --disk-reserve adjust them);
--metrics-addr serves /metrics, /livez, /healthz and /readyz alone, without
authentication: keep it on an internal address. /livez and /readyz answer
from the start, also while an older journal is migrated (its progress is
logged with a percent); /readyz has named checks (journal, synced,
streams, retention: /readyz?verbose lists them, /readyz/<check> asks one,
?exclude=<check> leaves one out), and a pod's readiness probe should ask
/readyz?exclude=synced&exclude=streams&exclude=retention, so that a
degraded stream does not take answers out of service. --log-format json
writes the log, client-go's included, one JSON object a line.

--listen ADDR serves the query API (docs/query-api.md) from this recorder's
journal, with /metrics, /livez, /healthz and /readyz, so that kubectl krply
--server URL answers without access to the file, and the Model Context
Protocol over Streamable HTTP at /mcp for AI assistants (the tools of
kubectl krply mcp, each call authorized as the same question to the query
API; replay_plan saves plans only with --listen-allow-writes). Unless ADDR is a loopback
address, give --listen-token-file (one bearer token per line, reread when
it changes) or --delegated-auth (the cluster's TokenReview and
SubjectAccessReview decide, per namespace). /metrics there takes the same
token, or with --delegated-auth get on the non-resource URL /metrics (a
ClusterRole rule nonResourceURLs: ["/metrics"], verbs: ["get"]). --tls-cert-file and
--tls-key-file serve HTTPS (read again when they change, so a renewed
certificate needs no restart), --ui the web UI at its root. --serve-only
serves an existing journal without recording.`,
		Example: `  kubectl krply record --resource deploy,cm,svc -n shop
  kubectl krply record --context prod --journal prod.db
  kubectl krply record -n shop --listen 127.0.0.1:8080
  kubectl krply record --all-resources --retention 30d --max-size 3Gi --listen :8080 --delegated-auth
  kubectl krply record --serve-only --journal prod.db --listen :8443 --listen-token-file tokens.txt --tls-cert-file tls.crt --tls-key-file tls.key`,
		Args: noArgs,
	}
	r.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if r.printVersion {
			fmt.Fprintln(e.Out, "kubectl-krply", recorder.Version(version))
			return nil
		}
		if r.all && cmd.Flags().Changed("namespace") {
			return usagef("-A records every namespace: give it without -n")
		}
		if e.server != "" {
			return usagef("--server asks a recorder; record writes a journal file: give --journal")
		}
		c := r.Config
		if err := c.Check(); err != nil {
			return usageError{err}
		}
		if r.rule != "" {
			rule, err := cel.CompileRule(r.rule)
			if err != nil {
				return usagef("--rule: %v", err)
			}
			c.RecordRule = rule
		}
		c.Journal, c.Open = e.journal, openStore
		if isPostgres(c.Journal) && c.DiskReserve > 0 {
			return usagef("--disk-reserve watches the disk of a journal file; a PostgreSQL --journal lives on the database's disk: leave it out")
		}
		c.ClusterID = e.clusterID
		c.Conditions = cel.Conditions()
		c.Cluster = e.restConfig
		var err error
		if c.Log, err = e.logger(r.logFormat, r.verbosity); err != nil {
			return err
		}
		// client-go logs through klog: its lines go to the same sink, in
		// the same format.
		klog.SetLogger(c.Log)
		if cmd.Flags().Changed("namespace") {
			for _, ns := range strings.Split(e.namespace(), ",") {
				if ns = strings.TrimSpace(ns); ns != "" {
					c.Namespaces = append(c.Namespaces, ns)
				}
			}
		}
		// MCP over Streamable HTTP beside the query API, answered by it.
		c.Serve = func(api http.Handler) (http.Handler, error) { return mcpHandler(api, mcpOptions{now: e.now}), nil }
		// /metrics through the Prometheus client library: krply's metrics
		// with the Go runtime's and the process's.
		c.MetricsHandler = prom.Handler
		return recorder.Run(cmd.Context(), e.Out, c)
	}
	return cmd
}

// logger returns the recorder's logger on stderr, in format (--log-format)
// at verbosity (-v).
func (e *env) logger(format string, verbosity int) (logr.Logger, error) {
	switch format {
	case "text":
		return funcr.New(func(prefix, args string) {
			fmt.Fprintln(e.ErrOut, e.now().Format(time.RFC3339Nano), prefix, args)
		}, funcr.Options{Verbosity: verbosity}), nil
	case "json":
		return funcr.NewJSON(func(obj string) { fmt.Fprintln(e.ErrOut, obj) }, funcr.Options{Verbosity: verbosity,
			RenderBuiltinsHook: func(kv []any) []any { return append([]any{"ts", e.now().Format(time.RFC3339Nano)}, kv...) }}), nil
	}
	return logr.Logger{}, usagef("--log-format %q: want text or json", format)
}
