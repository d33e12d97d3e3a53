package audit_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/memory"
)

// A journal with one recorded change, and the audit log of the API server
// that made it: after Ingest, the change has its author.
func Example() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()

	// What the collector recorded: a baseline, then the ADDED event of
	// ConfigMap shop/settings at resourceVersion 1001.
	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps"}
	observed := time.Date(2026, 1, 5, 10, 0, 0, 120e6, time.UTC)
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps",
		Namespace: "shop", Name: "settings", UID: "uid-1", ResourceVersion: "1001"}
	added := event.Record{
		Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, event.Added),
		ClusterID: "prod", StreamID: stream.ID(), ObservedAt: observed, WatchType: event.Added,
		Resource: ref, Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}`),
	}
	if _, err := store.Append(ctx, []event.Record{added}); err != nil {
		fmt.Println(err)
		return
	}

	// The API server's audit log: the create, a read, and a damaged line.
	log := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"4d2f","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps","verb":"create","user":{"username":"alice","groups":["devs"]},"sourceIPs":["192.0.2.10"],"userAgent":"kubectl/v1.37.2","objectRef":{"resource":"configmaps","namespace":"shop","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"shop","uid":"uid-1","resourceVersion":"1001"}},"requestReceivedTimestamp":"2026-01-05T10:00:00.100000Z","stageTimestamp":"2026-01-05T10:00:00.110000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"9a7c","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps/settings","verb":"get","user":{"username":"bob"},"objectRef":{"resource":"configmaps","namespace":"shop","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-01-05T10:00:01.000000Z","stageTimestamp":"2026-01-05T10:00:01.001000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Meta
`
	reader, err := audit.NewReader(strings.NewReader(log), "audit.log")
	if err != nil {
		fmt.Println(err)
		return
	}
	correlator, err := audit.NewCorrelator(store, "prod")
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := correlator.Ingest(ctx, reader)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exact %d, read-only %d, malformed %d (line %d), recorded %d\n",
		sum.Exact, sum.SkippedReadOnly, sum.Malformed, sum.Problems[0].Line, sum.Recorded)

	corr, err := store.Correlations(ctx, []string{added.EventID})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range corr[added.EventID] {
		a := c.Audit
		fmt.Printf("%s %s %s by %s from %v (%s, confidence %.1f)\n",
			added.WatchType, added.Resource, a.Verb, a.User, a.SourceIPs, a.Rule, a.Confidence)
	}
	// Output:
	// exact 1, read-only 1, malformed 1 (line 3), recorded 1
	// ADDED configmaps shop/settings create by alice from [192.0.2.10] (exact-resource-version, confidence 1.0)
}

// Ingesting an API server's audit log with its rotated backups, oldest
// first; run it again whenever the log grows — what was stored already is
// not stored again.
func ExampleRotatedFiles() {
	ctx := context.Background()
	store := memory.New() // in production: the collector's storage/sqlite journal
	defer store.Close()
	correlator, err := audit.NewCorrelator(store, "prod")
	if err != nil {
		fmt.Println(err)
		return
	}
	files, err := audit.RotatedFiles("/var/log/kubernetes/audit.log")
	if err != nil {
		fmt.Println(err)
		return
	}
	log, err := audit.OpenFiles(files)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	sum, err := correlator.Ingest(ctx, log)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d exact, %d scored, %d unmatched, %d malformed\n", sum.Exact, sum.Scored, sum.Unmatched, sum.Malformed)
}

// Receiving the webhook backend's batches: point the API server's
// --audit-webhook-config-file (a kubeconfig) at this server.
func ExampleNewWebhookHandler() {
	store := memory.New() // in production: the collector's journal
	defer store.Close()
	correlator, err := audit.NewCorrelator(store, "prod")
	if err != nil {
		fmt.Println(err)
		return
	}
	handler, err := audit.NewWebhookHandler(correlator, audit.WithSettleDelay(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/audit", handler)
	server := &http.Server{Addr: "127.0.0.1:8443", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	_ = server // server.ListenAndServeTLS(certFile, keyFile)
}
