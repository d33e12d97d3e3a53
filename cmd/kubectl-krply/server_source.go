package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

// serverSource answers from a recorder's query API (--server), with the
// same library types a journal file gives, so every command prints the
// same either way. Dry runs and applies run on the server's target
// cluster, when the server allows them.
type serverSource struct {
	url string
	c   *client.Client
}

var _ source = (*serverSource)(nil)

// openServer connects to --server with --token or --token-file, and
// kubectl's flags for the connection to its --server: each request bounded
// by --request-timeout (0, the default, for none), the server's
// certificate checked against --certificate-authority (else the system's
// roots) unless --insecure-skip-tls-verify, and answers asked plain with
// --disable-compression.
func openServer(e *env) (source, error) {
	token := e.token
	if e.tokenFile != "" {
		if token != "" {
			return nil, usagef("give --token or --token-file, not both")
		}
		raw, err := os.ReadFile(e.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(raw))
	}
	var opts []client.Option
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	if e.kube.DisableCompression != nil && *e.kube.DisableCompression {
		opts = append(opts, client.WithoutCompression())
	}
	hc, err := e.serverHTTPClient()
	if err != nil {
		return nil, err
	}
	if hc != nil {
		opts = append(opts, client.WithHTTPClient(hc))
	}
	c, err := client.New(e.server, opts...)
	if err != nil {
		return nil, usagef("--server %q: %v", e.server, err)
	}
	return &serverSource{url: e.server, c: c}, nil
}

// serverHTTPClient is the HTTP client of --server as kubectl's flags for
// a connection say; nil when they leave http.DefaultClient's as it is.
func (e *env) serverHTTPClient() (*http.Client, error) {
	if e.kube.Timeout != nil {
		d, err := clientcmd.ParseTimeout(*e.kube.Timeout)
		if err != nil {
			return nil, usagef("--request-timeout %q: want a duration with its unit (30s, 2m) or 0 for none", *e.kube.Timeout)
		}
		e.serverTimeout = d
	}
	var tlsConfig *tls.Config
	if e.kube.CAFile != nil && *e.kube.CAFile != "" {
		raw, err := os.ReadFile(*e.kube.CAFile)
		if err != nil {
			return nil, usagef("--certificate-authority: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw) {
			return nil, usagef("--certificate-authority %s: no PEM certificate in it", *e.kube.CAFile)
		}
		tlsConfig = &tls.Config{RootCAs: pool}
	}
	if e.kube.Insecure != nil && *e.kube.Insecure {
		if tlsConfig != nil {
			return nil, usagef("give --certificate-authority or --insecure-skip-tls-verify, not both")
		}
		tlsConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user's explicit choice
	}
	if e.serverTimeout == 0 && tlsConfig == nil {
		return nil, nil
	}
	hc := &http.Client{Timeout: e.serverTimeout}
	if tlsConfig != nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = tlsConfig
		hc.Transport = t
	}
	return hc, nil
}

func (s *serverSource) Close() error { return nil }

// journalOnly is the error of what only a journal file answers.
func (s *serverSource) journalOnly(what string) error {
	return usagef("%s needs the journal file (--journal); the query API at %s does not offer it", what, s.url)
}

func (s *serverSource) Clusters(ctx context.Context) ([]string, error) {
	clusters, err := s.c.Clusters(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(clusters))
	for _, c := range clusters {
		ids = append(ids, c.ClusterID)
	}
	return ids, nil
}

func (s *serverSource) Streams(ctx context.Context, clusterID, namespace string, at time.Time) ([]streamInfo, error) {
	scope := materialize.Scope{ClusterID: clusterID}
	if namespace != "" {
		scope.Namespaces = []string{namespace}
	}
	infos, err := s.c.Streams(ctx, scope, at)
	if err != nil {
		return nil, err
	}
	out := make([]streamInfo, 0, len(infos))
	for _, in := range infos {
		out = append(out, streamInfo{Status: in.Status, Coverage: in.Coverage})
	}
	return out, nil
}

func (s *serverSource) Losses(ctx context.Context, clusterID, namespace string, since, until time.Time) ([]event.Record, error) {
	scope := materialize.Scope{ClusterID: clusterID}
	if namespace != "" {
		scope.Namespaces = []string{namespace}
	}
	q := client.RecordQuery{Scope: scope, Types: []event.RecordType{event.TypeGap, event.TypeCoverageChange},
		Since: since, Until: until, WithoutBodies: true}
	var out []event.Record
	for {
		page, err := s.c.Records(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

func (s *serverSource) ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*materialize.ObjectState, error) {
	st, err := s.c.ObjectAt(ctx, obj, at)
	return st, neverRecorded(err)
}

func (s *serverSource) History(ctx context.Context, obj storage.ObjectID, opts ...materialize.HistoryOption) (*materialize.History, error) {
	h, err := s.c.History(ctx, obj, opts...)
	return h, neverRecorded(err)
}

// neverRecorded turns the API's not_found for an object into the error a
// journal file gives.
func neverRecorded(err error) error {
	if errors.Is(err, krply.ErrNotFound) {
		return errNeverRecorded
	}
	return err
}

func (s *serverSource) Why(ctx context.Context, q why.Query) (*why.Answer, error) {
	return s.c.Why(ctx, q)
}

func (s *serverSource) Snapshot(ctx context.Context, scope materialize.Scope, at time.Time) (*materialize.Snapshot, error) {
	return s.c.Snapshot(ctx, scope, at)
}

func (s *serverSource) SaveSnapshot(ctx context.Context, scope materialize.Scope, at time.Time, name string) (*materialize.Snapshot, error) {
	return s.c.SaveSnapshot(ctx, scope, at, name)
}

func (s *serverSource) Diff(ctx context.Context, scope materialize.Scope, from, to time.Time, opts ...materialize.CompareOption) (*materialize.Diff, error) {
	return s.c.Diff(ctx, scope, from, to, opts...)
}

func (s *serverSource) GetSnapshot(ctx context.Context, id string) (*materialize.Snapshot, error) {
	return s.c.GetSnapshot(ctx, id)
}

func (s *serverSource) ListSnapshots(ctx context.Context, clusterID string) ([]materialize.Snapshot, error) {
	return s.c.ListSnapshots(ctx, clusterID)
}

func (s *serverSource) Find(ctx context.Context, q materialize.FindQuery, expr string) (*materialize.Found, error) {
	return s.c.Find(ctx, q, expr)
}

func (s *serverSource) Plan(ctx context.Context, src replay.Source, tgt replay.Target, policy replay.Policy) (*replay.Plan, error) {
	return s.c.Plan(ctx, server.PlanRequest{Source: src, Target: tgt, Policy: &policy})
}

func (s *serverSource) LoadPlan(ctx context.Context, id string) (*replay.Plan, error) {
	return s.c.LoadPlan(ctx, id)
}

func (s *serverSource) DryRun(ctx context.Context, plan *replay.Plan, _ targetConfig) (*replay.DryRunReport, error) {
	return s.c.DryRun(ctx, plan.ID)
}

func (s *serverSource) Apply(ctx context.Context, _ *replay.Plan, _ targetConfig, confirm replay.Confirmation) (*replay.ApplyReport, error) {
	report, err := s.c.Apply(ctx, confirm)
	var serr *server.Error
	if errors.As(err, &serr) && serr.Code == "conflict" {
		return report, fmt.Errorf("plan %s was not applied: %s; apply exactly the plan you reviewed with its hash (kubectl krply replay dry-run %s prints it)", confirm.PlanID, serr.Message, confirm.PlanID)
	}
	return report, err
}

func (s *serverSource) IngestAudit(context.Context, string, []string) (audit.Summary, error) {
	return audit.Summary{}, s.journalOnly("audit ingest")
}
