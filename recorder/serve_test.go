package recorder_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/recorder/recordertest"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// The recorder serves the query API while it records: clients get the
// library's answers, the change feed delivers every new record once across
// a reconnect, the cluster's RBAC decides who reads which namespace, and
// an unauthenticated request is refused. The recorder never stops.
func TestRecordAndServe(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	// alice may read the history of ns; bob may not.
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "history-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{server.AuthGroup}, Resources: []string{server.ResourceHistory}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "history-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: testenv.UserAlice}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"}, "data": map[string]any{"color": "c0"}}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	change := func(i int) string {
		t.Helper()
		obj, err := cms.Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(obj.Object, "c"+strconv.Itoa(i), "data", "color"); err != nil {
			t.Fatal(err)
		}
		obj, err = cms.Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return obj.GetResourceVersion()
	}

	store := filepath.Join(t.TempDir(), "krply.db")
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: store, Resources: []string{"cm"}, Namespaces: []string{ns},
		Listen: "127.0.0.1:0", DelegatedAuth: true})
	base := rec.Serving(ctx)
	as := func(user string) *client.Client {
		c, err := client.New(base, client.WithToken(env.ConfigFor(user).BearerToken))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := as(testenv.UserAdmin)
	for c.Ready(ctx) != nil {
		select {
		case err := <-rec.Done():
			t.Fatalf("record returned: %v\n%s", err, rec.Out.String())
		case <-ctx.Done():
			t.Fatalf("never ready:\n%s", rec.Out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	clusters, err := c.Clusters(ctx)
	if err != nil || len(clusters) != 1 {
		t.Fatalf("clusters: %+v, %v", clusters, err)
	}
	clusterID := clusters[0].ClusterID
	// The recorder's Prometheus metrics are served on --listen too, to a
	// user allowed get on the non-resource URL /metrics (the admin), not
	// to bob (403) nor without a token (401): they name the namespaces.
	code, text := get(base+"/metrics", "Authorization", "Bearer "+env.ConfigFor(testenv.UserAdmin).BearerToken)
	for _, want := range []string{"\nkrply_synced 1\n", `namespace="` + ns + `"`, `source_cluster="` + clusterID + `"`,
		`krply_api_request_duration_seconds_count{method="GET",route="/api/v1/clusters"} 1` + "\n"} {
		if code != http.StatusOK || !strings.Contains(text, want) {
			t.Fatalf("GET /metrics as the admin: %d, want %q in\n%s", code, want, text)
		}
	}
	for _, c := range []struct {
		header []string
		code   int
	}{{nil, http.StatusUnauthorized}, {[]string{"Authorization", "Bearer " + env.ConfigFor(testenv.UserBob).BearerToken}, http.StatusForbidden}} {
		if code, text := get(base+"/metrics", c.header...); code != c.code || strings.Contains(text, ns) {
			t.Errorf("GET /metrics with %d headers: %d %s; want %d", len(c.header), code, text, c.code)
		}
	}
	settings := storage.ObjectID{ClusterID: clusterID, Resource: "configmaps", Namespace: ns, Name: "settings"}
	feedQuery := client.WatchQuery{Scope: materialize.Scope{ClusterID: clusterID, Namespaces: []string{ns}}, Name: "settings", Types: []event.RecordType{event.TypeEvent}, Cursor: "0"}

	// The feed from the start: the baseline item, then two changes.
	feed, err := as(testenv.UserAlice).Watch(ctx, feedQuery)
	if err != nil {
		t.Fatal(err)
	}
	var rvs []string
	for i := 1; i <= 2; i++ {
		rvs = append(rvs, change(i))
	}
	first := readRVs(t, feed, 3)
	if first[1] != rvs[0] || first[2] != rvs[1] {
		t.Fatalf("feed: resourceVersions %v; want the baseline's, then %v", first, rvs)
	}
	cursor := feed.Cursor()
	feed.Close()

	// While disconnected, three more changes; resumed, exactly those.
	var missed []string
	for i := 3; i <= 5; i++ {
		missed = append(missed, change(i))
	}
	feedQuery.Cursor = cursor
	feed, err = as(testenv.UserAlice).Watch(ctx, feedQuery)
	if err != nil {
		t.Fatal(err)
	}
	if got := readRVs(t, feed, 3); strings.Join(got, ",") != strings.Join(missed, ",") {
		t.Fatalf("feed resumed after %s: %v; want exactly %v", cursor, got, missed)
	}
	extra := make(chan event.Record, 1)
	go func() {
		if rec, err := feed.Next(); err == nil {
			extra <- rec
		}
	}()
	select {
	case rec := <-extra:
		t.Fatalf("the resumed feed sent a record again or one too many: %+v", rec.Resource)
	case <-time.After(time.Second):
	}
	feed.Close()

	// Answers equal the library's on the same journal, read by a
	// read-only open of the recorder's file; asked again if the recorder
	// appended progress in between.
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	atTime := time.Now()
	for attempt := 1; ; attempt++ {
		got, err := c.ObjectAt(ctx, settings, atTime)
		if err != nil {
			t.Fatal(err)
		}
		want, err := j.ObjectAt(ctx, settings, atTime)
		if err != nil {
			t.Fatal(err)
		}
		gotHist, err := c.History(ctx, settings)
		if err != nil {
			t.Fatal(err)
		}
		wantHist, err := j.History(ctx, settings, materialize.Limit(server.DefaultMaxPageSize))
		if err != nil {
			t.Fatal(err)
		}
		if same(got, want) && same(gotHist, wantHist) {
			if len(gotHist.Versions()) != 6 || !got.Exists || !strings.Contains(string(got.Object), `"c5"`) {
				t.Fatalf("settings now: exists %v, %d versions; want c5 after 6 versions", got.Exists, len(gotHist.Versions()))
			}
			break
		}
		if attempt == 3 {
			t.Fatalf("the API's answers differ from the library's:\n%+v\n%+v", got, want)
		}
	}

	// RBAC decides: alice reads ns, bob does not, nobody anonymous.
	if _, err := as(testenv.UserAlice).History(ctx, settings); err != nil {
		t.Errorf("alice reads %s: %v", ns, err)
	}
	var e *server.Error
	if _, err := as(testenv.UserBob).History(ctx, settings); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("bob reads %s: %v; want 403", ns, err)
	}
	if _, err := as(testenv.UserAlice).Snapshot(ctx, materialize.Scope{ClusterID: clusterID}, time.Now()); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("alice reads every namespace: %v; want 403", err)
	}
	anonymous, _ := client.New(base)
	if _, err := anonymous.Clusters(ctx); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("an unauthenticated request: %v; want 401", err)
	}

	// The recorder kept recording throughout and stops cleanly.
	select {
	case err := <-rec.Done():
		t.Fatalf("record stopped while serving: %v\n%s", err, rec.Out.String())
	default:
	}
	rec.Stop(ctx)

	// --serve-only serves the stopped recorder's journal read-only.
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("reader-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	served := recordertest.Start(t, recorder.Config{Journal: store, Listen: "127.0.0.1:0", TokenFile: tokens, ServeOnly: true, Conditions: substringConditions{}})
	reader, _ := client.New(served.Serving(ctx), client.WithToken("reader-token"))
	if st, err := reader.ObjectAt(ctx, settings, atTime); err != nil || !strings.Contains(string(st.Object), `"c5"`) {
		t.Errorf("serve-only: %+v, %v", st, err)
	}
	// Config.Conditions serves find.
	found, err := reader.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: settings.ClusterID, Namespaces: []string{settings.Namespace}}}, `"c5"`)
	if err != nil || len(found.Objects) != 1 || found.Objects[0].Object != settings {
		t.Errorf("serve-only find: %+v, %v; want settings", found, err)
	}
	served.Stop(ctx)
}

// substringConditions compiles an expression into "the body contains it".
type substringConditions struct{}

func (substringConditions) Compile(expr string) (materialize.Predicate, error) {
	return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return strings.Contains(string(object), expr), nil
	}), nil
}

// readRVs reads n records from a feed and returns their resourceVersions.
func readRVs(t *testing.T, f *client.Feed, n int) []string {
	t.Helper()
	var out []string
	for len(out) < n {
		ch := make(chan error, 1)
		var rec event.Record
		go func() { var err error; rec, err = f.Next(); ch <- err }()
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("feed after %v: %v", out, err)
			}
			out = append(out, rec.Resource.ResourceVersion)
		case <-time.After(30 * time.Second):
			t.Fatalf("feed: only %v after 30 s", out)
		}
	}
	return out
}

// same reports whether a and b marshal to the same JSON.
func same(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// Flags that cannot work are refused before anything starts.
func TestServeFlags(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		c    recorder.Config
		want string
	}{
		"tls without listen":    {recorder.Config{TLSCertFile: "c", TLSKeyFile: "k"}, "need --listen"},
		"writes without listen": {recorder.Config{AllowWrites: true}, "need --listen"},
		"cert without key":      {recorder.Config{Listen: "127.0.0.1:0", TLSCertFile: "c"}, "both --tls-cert-file and --tls-key-file"},
		"open without auth":     {recorder.Config{Listen: ":8080"}, "give --listen-token-file or --delegated-auth"},
		"not host:port":         {recorder.Config{Listen: "8080", TokenFile: tokens}, "want host:port"},
		"missing token file":    {recorder.Config{Listen: ":8080", TokenFile: tokens + ".missing"}, "--listen-token-file"},
		"serve-only delegation": {recorder.Config{Listen: "127.0.0.1:0", ServeOnly: true, DelegatedAuth: true}, "--serve-only"},
		"serve-only no journal": {recorder.Config{Listen: "127.0.0.1:0", ServeOnly: true, TokenFile: tokens}, "journal"},
		"no cluster":            {recorder.Config{}, "--kubeconfig"},
	}
	for name, tc := range cases {
		tc.c.Journal = filepath.Join(t.TempDir(), "none.db")
		err := recorder.Run(context.Background(), &testenv.Buffer{}, tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, tc.want)
		}
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the
// serial and its key to certFile and keyFile, and returns it.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// --serve-only with --tls-cert-file and --tls-key-file serves HTTPS, and
// the renewed certificate once its files change, without a restart (a
// Secret volume is updated in place when cert-manager renews it). Files
// that hold no key pair are refused before serving, naming the flags.
func TestServeOnlyTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	store := filepath.Join(dir, "krply.db")
	j, err := krply.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeCert(t, certFile, keyFile, 1)
	served := recordertest.Start(t, recorder.Config{Journal: store, Listen: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile, ServeOnly: true})
	https := served.WaitFor(ctx, regexp.MustCompile(`serving the query API on (https://(\S+))`))
	pool := x509.NewCertPool()
	pool.AddCert(first)
	c, err := client.New(https[1],
		client.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Errorf("healthz over TLS: %v", err)
	}

	renewed := writeCert(t, certFile, keyFile, 2)
	pool.AddCert(renewed)
	var serial int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		conn, err := tls.Dial("tcp", https[2], &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatalf("a TLS connection while the certificate is renewed: %v", err)
		}
		serial = conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
		conn.Close()
		if serial == 2 {
			break
		}
	}
	if serial != 2 {
		t.Errorf("10 s after the certificate's files were renewed, the recorder serves serial %d; want the renewed one, 2", serial)
	}
	served.Stop(ctx)

	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = recorder.Run(ctx, &out, recorder.Config{Journal: store, Listen: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile, ServeOnly: true})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert-file") || !strings.Contains(err.Error(), "--tls-key-file") || strings.Contains(out.String(), "serving") {
		t.Errorf("--serve-only with a key file that holds no key: %v, output %q; want an error naming the flags before serving", err, out.String())
	}
}

// --ui serves the web UI at the root of --listen; without it the root is
// the API's 404.
func TestServeUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := emptyJournal(ctx, t)
	for _, ui := range []bool{true, false} {
		served := recordertest.Start(t, recorder.Config{Journal: store, Listen: "127.0.0.1:0", ServeOnly: true, UI: ui})
		resp, err := http.Get(served.Serving(ctx) + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") && strings.Contains(string(body), "<html")
		if page != ui {
			t.Errorf("--ui %v: GET / = %s, %s; want the UI's page: %v", ui, resp.Status, resp.Header.Get("Content-Type"), ui)
		}
		served.Stop(ctx)
	}
}

// Config.Serve serves what it makes of the query API's handler on
// --listen (the plugin adds MCP this way), the API still behind it; an
// error of Serve stops the recorder, naming --listen.
func TestServeWraps(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := emptyJournal(ctx, t)
	wrap := func(api http.Handler) (http.Handler, error) {
		mux := http.NewServeMux()
		mux.HandleFunc("/extra", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "beside the API") })
		mux.Handle("/", api)
		return mux, nil
	}
	served := recordertest.Start(t, recorder.Config{Journal: store, Listen: "127.0.0.1:0", ServeOnly: true, Serve: wrap})
	base := served.Serving(ctx)
	if code, body := get(base + "/extra"); code != http.StatusOK || body != "beside the API" {
		t.Errorf("GET /extra = %d %q", code, body)
	}
	if code, body := get(base + server.Prefix + "clusters"); code != http.StatusOK || !strings.Contains(body, `"items"`) {
		t.Errorf("GET clusters beside /extra = %d %s", code, body)
	}
	served.Stop(ctx)
	err := recorder.Run(ctx, io.Discard, recorder.Config{Journal: store, Listen: "127.0.0.1:0", ServeOnly: true,
		Serve: func(http.Handler) (http.Handler, error) { return nil, errors.New("no MCP today") }})
	if err == nil || !strings.Contains(err.Error(), "--listen: no MCP today") {
		t.Errorf("Serve failing: %v, want the recorder to stop naming --listen", err)
	}
}

// --serve-only on a journal of an older schema version refuses it
// without touching it, and says how to migrate it, in flags and commands.
func TestServeOnlyOlderJournal(t *testing.T) {
	older := filepath.Join("..", "storage", "sqlite", "testdata", "format", fmt.Sprintf("v%d.db", sqlite.SchemaVersion-1))
	data, err := os.ReadFile(older)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	journal, tokens := filepath.Join(dir, "krply.db"), filepath.Join(dir, "tokens")
	if err := os.WriteFile(journal, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokens, []byte("t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = recorder.Run(context.Background(), &testenv.Buffer{}, recorder.Config{Journal: journal, Listen: "127.0.0.1:0", TokenFile: tokens, ServeOnly: true})
	for _, want := range []string{fmt.Sprintf("schema version %d", sqlite.SchemaVersion-1), "without --serve-only", "kubectl krply migrate --journal " + journal} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--serve-only on an older journal: %v; want an error saying %q", err, want)
		}
	}
	if after, err := os.ReadFile(journal); err != nil || !bytes.Equal(after, data) {
		t.Errorf("--serve-only changed the older journal (%v)", err)
	}
}

// emptyJournal makes an empty journal for a --serve-only recorder and
// returns its path.
func emptyJournal(ctx context.Context, t *testing.T) string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "krply.db")
	j, err := krply.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return store
}
