package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TB is the part of testing.TB that testenv uses; *testing.T and *testing.B
// satisfy it.
type TB interface {
	Helper()
	Name() string
	Cleanup(func())
	Failed() bool
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Environment variables read by the harness.
const (
	// AssetsEnv names the folder holding the etcd and kube-apiserver
	// binaries, in the envtest convention. `make testbin` builds them and
	// hack/testbin.sh prints the folder.
	AssetsEnv = "KUBEBUILDER_ASSETS"
	// RequireEnv, when true ("1"), turns missing binaries into a test
	// failure instead of a skip. `make test` sets it.
	RequireEnv = "KRPLY_REQUIRE_TESTENV"
	// KeepEnv, when true, keeps the environment's folder (logs, certificates,
	// etcd data) after the test; it is kept without the etcd data whenever
	// the test failed.
	KeepEnv = "KRPLY_TESTENV_KEEP"
)

// Users of the static token file, each with a bearer token. ConfigFor returns
// a rest.Config that authenticates as one of them.
const (
	// UserAdmin is in system:masters: every request is allowed.
	UserAdmin = "admin"
	// UserAlice and UserBob are in GroupEditors, with the rights of the
	// built-in "edit" role (read and write most namespaced resources, no
	// RBAC). Two editors let audit tests tell writers apart.
	UserAlice = "alice"
	UserBob   = "bob"
	// UserViewer is in GroupViewers, with the rights of the built-in "view"
	// role: read most resources, but no Secrets and no writes.
	UserViewer = "viewer"
	// UserNobody is authenticated but granted nothing beyond discovery: every
	// request for a resource is forbidden (403).
	UserNobody = "nobody"
)

// Groups bound to roles when an environment starts.
const (
	GroupEditors = "krply:editors"
	GroupViewers = "krply:viewers"
)

// user is an entry of the static token file.
type user struct {
	name   string
	groups []string
	token  string
}

func defaultUsers() []user {
	return []user{
		{name: UserAdmin, groups: []string{"system:masters"}},
		{name: UserAlice, groups: []string{GroupEditors}},
		{name: UserBob, groups: []string{GroupEditors}},
		{name: UserViewer, groups: []string{GroupViewers}},
		{name: UserNobody},
	}
}

// Option configures Start and RunMain.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	apiServerFlags []string
	auditPolicy    *string
	users          []user
	startTimeout   time.Duration
}

// WithAPIServerFlags adds kube-apiserver flags, written "--name=value". A flag
// the harness sets itself is replaced, except --etcd-servers, which the
// harness owns (a repeated --etcd-servers adds a server instead of replacing
// it).
func WithAPIServerFlags(flags ...string) Option {
	return optionFunc(func(c *config) { c.apiServerFlags = append(c.apiServerFlags, flags...) })
}

// DefaultAuditPolicy logs writes at RequestResponse level (so the response's
// resourceVersion is in the log) and every other resource request at
// Metadata level. Health checks and the apiserver's own lease renewals are
// not logged.
const DefaultAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
- level: None
  users: ["system:apiserver"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: RequestResponse
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
`

// WithAudit turns on the audit log of the primary kube-apiserver, as JSON
// lines in the file APIServer.AuditLogPath names, with the given policy
// (YAML of an audit.k8s.io/v1 Policy); an empty policy means
// DefaultAuditPolicy. The log backend runs in blocking mode: the request's
// handler writes its events itself, so they reach the file moments after the
// client has the response (poll for them; they are never dropped).
func WithAudit(policy string) Option {
	return optionFunc(func(c *config) {
		if policy == "" {
			policy = DefaultAuditPolicy
		}
		c.auditPolicy = &policy
	})
}

// WithUser adds a user to the static token file, in the given groups (the
// apiserver adds system:authenticated). The user has no rights until a test
// binds a role to it or to one of its groups.
func WithUser(name string, groups ...string) Option {
	return optionFunc(func(c *config) { c.users = append(c.users, user{name: name, groups: groups}) })
}

// WithStartTimeout bounds how long Start waits for etcd and kube-apiserver
// to become ready (default two minutes; they need 3–4 seconds on an idle
// machine and 15–20 on a busy two-core one).
func WithStartTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.startTimeout = d })
}

func newConfig(opts []Option) (*config, error) {
	c := &config{users: defaultUsers(), startTimeout: 2 * time.Minute}
	for _, o := range opts {
		o.apply(c)
	}
	seen := map[string]bool{}
	for i := range c.users {
		u := &c.users[i]
		if u.name == "" || strings.ContainsAny(u.name, ",\"\n") {
			return nil, fmt.Errorf("testenv: invalid user name %q", u.name)
		}
		if seen[u.name] {
			return nil, fmt.Errorf("testenv: user %q defined twice", u.name)
		}
		seen[u.name] = true
		u.token = u.name + "-" + randomHex(16)
	}
	for _, f := range c.apiServerFlags {
		if _, _, err := splitFlag(f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// MissingBinariesError reports that etcd or kube-apiserver is not where
// KUBEBUILDER_ASSETS points.
type MissingBinariesError struct {
	Assets  string // the folder searched, "" when KUBEBUILDER_ASSETS is unset
	Missing []string
}

func (e *MissingBinariesError) Error() string {
	where := AssetsEnv + " is not set"
	if e.Assets != "" {
		where = fmt.Sprintf("%s=%s lacks %s", AssetsEnv, e.Assets, strings.Join(e.Missing, " and "))
	}
	return fmt.Sprintf("testenv: no local control plane: %s; run `make testbin` and set %s to the folder it prints "+
		"(`export %s=$(hack/testbin.sh | tail -n 1)`), or run `make test`", where, AssetsEnv, AssetsEnv)
}

// binaries finds etcd and kube-apiserver in KUBEBUILDER_ASSETS.
func binaries() (etcdPath, apiServerPath string, err error) {
	assets := os.Getenv(AssetsEnv)
	if assets == "" {
		return "", "", &MissingBinariesError{}
	}
	var missing []string
	find := func(name string) string {
		p := filepath.Join(assets, name)
		if info, err := os.Stat(p); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
		return p
	}
	etcdPath, apiServerPath = find("etcd"), find("kube-apiserver")
	if len(missing) > 0 {
		return "", "", &MissingBinariesError{Assets: assets, Missing: missing}
	}
	return etcdPath, apiServerPath, nil
}

// report fails or skips t for an error of start: missing binaries are a skip
// unless KRPLY_REQUIRE_TESTENV is true.
func report(t TB, err error) {
	t.Helper()
	var missing *MissingBinariesError
	if errors.As(err, &missing) {
		if require, _ := strconv.ParseBool(os.Getenv(RequireEnv)); !require {
			t.Skipf("%v", err)
			return
		}
	}
	t.Fatalf("%v", err)
}

// Env is a running control plane: one etcd and a primary kube-apiserver,
// plus any apiservers added with StartAPIServer. Env embeds the primary
// APIServer, so env.Config() is the primary's admin configuration.
//
// Its methods are safe for concurrent use.
type Env struct {
	*APIServer

	dir   string
	cfg   *config
	etcd  *etcd
	files *sharedFiles

	mu         sync.Mutex
	apiServers []*APIServer // every apiserver started, the primary first
	stopped    bool
}

// Start starts etcd and kube-apiserver and stops them when t's test ends. It
// skips t when the binaries are missing — or fails it when
// KRPLY_REQUIRE_TESTENV is true — with a message naming `make testbin`.
func Start(t TB, opts ...Option) *Env {
	t.Helper()
	env, err := start(opts)
	if err != nil {
		report(t, err)
		return nil
	}
	t.Cleanup(func() {
		if kept := env.stop(t.Failed()); kept != "" {
			t.Logf("testenv: control plane logs kept in %s", kept)
		}
	})
	t.Logf("testenv: control plane up in %v at %s (logs in %s)", env.startedIn.Round(time.Millisecond), env.Host(), env.dir)
	return env
}

func start(opts []Option) (env *Env, err error) {
	begin := time.Now()
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	etcdPath, apiServerPath, err := binaries()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()

	dir, err := os.MkdirTemp("", "krply-testenv-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	env = &Env{dir: dir, cfg: cfg}
	defer func() {
		if err != nil {
			env.stop(true)
		}
	}()
	if env.files, err = writeSharedFiles(dir, apiServerPath, cfg); err != nil {
		return env, err
	}
	if env.etcd, err = startEtcd(ctx, etcdPath, dir); err != nil {
		return env, err
	}
	if env.APIServer, err = env.startAPIServer(ctx, cfg.apiServerFlags, cfg.auditPolicy); err != nil {
		return env, err
	}
	if err := env.bindRoles(ctx); err != nil {
		return env, err
	}
	env.APIServer.startedIn = time.Since(begin)
	return env, nil
}

// Dir is the environment's folder: logs, certificates, token file, etcd data.
func (e *Env) Dir() string { return e.dir }

// EtcdURL is etcd's client URL (plain HTTP on loopback).
func (e *Env) EtcdURL() string { return e.etcd.url }

// Compact compacts etcd's history up to its current revision, physically,
// and returns that revision. Afterwards, reads and watches from an older
// resourceVersion fail with 410 Gone (reason Expired) on an apiserver that
// serves them from etcd — one without a watch cache for the resource, see
// StartAPIServer. An apiserver with the watch cache on keeps serving watches
// from its cache.
//
// kube-apiserver's own periodic compaction is off in this harness
// (--etcd-compaction-interval=0), so history is only lost when a test says so.
func (e *Env) Compact(ctx context.Context) (revision int64, err error) {
	return e.etcd.compact(ctx)
}

// EtcdRevision returns etcd's current revision.
func (e *Env) EtcdRevision(ctx context.Context) (int64, error) {
	return e.etcd.revision(ctx)
}

// StartAPIServer starts another kube-apiserver on the same etcd, with the
// same users and certificates authority, configured with the harness's
// defaults plus flags ("--name=value"), and stops it when t's test ends.
// With "--watch-cache=false", or "--watch-cache-sizes=configmaps#0" for a
// single resource, watches and lists are served from etcd, so a watch from a
// resourceVersion older than the last Compact fails with 410.
func (e *Env) StartAPIServer(t TB, flags ...string) *APIServer {
	t.Helper()
	for _, f := range flags {
		if _, _, err := splitFlag(f); err != nil {
			t.Fatalf("%v", err)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.startTimeout)
	defer cancel()
	begin := time.Now()
	s, err := e.startAPIServer(ctx, flags, nil)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	s.startedIn = time.Since(begin)
	t.Cleanup(s.stop)
	t.Logf("testenv: %s up in %v at %s", s.name, s.startedIn.Round(time.Millisecond), s.Host())
	return s
}

// stop stops every apiserver, then etcd, and removes the folder (keeping the
// logs when failed is true or KRPLY_TESTENV_KEEP is set). It returns the
// folder when it kept it.
func (e *Env) stop(failed bool) (kept string) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return ""
	}
	e.stopped = true
	servers := e.apiServers
	e.mu.Unlock()
	// apiservers first: an apiserver whose etcd vanished retries for a while
	// before it notices SIGTERM's deadline.
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stop()
		}()
	}
	wg.Wait()
	if e.etcd != nil {
		e.etcd.proc.stop()
	}
	keep, _ := strconv.ParseBool(os.Getenv(KeepEnv))
	switch {
	case keep:
		return e.dir
	case failed:
		_ = os.RemoveAll(filepath.Join(e.dir, "etcd-data"))
		return e.dir
	default:
		_ = os.RemoveAll(e.dir)
		return ""
	}
}

// gvr of the RBAC objects the harness creates.
var clusterRoleBindings = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}

// bindRoles grants GroupEditors and GroupViewers their rights. The built-in
// "edit" and "view" roles are aggregated by kube-controller-manager, which
// this harness does not run, so the groups are bound to the roles those two
// aggregate instead (edit = aggregate-to-edit + aggregate-to-view).
func (e *Env) bindRoles(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	bindings := []struct{ name, role, group string }{
		{"krply-testenv-editors-edit", "system:aggregate-to-edit", GroupEditors},
		{"krply-testenv-editors-view", "system:aggregate-to-view", GroupEditors},
		{"krply-testenv-viewers-view", "system:aggregate-to-view", GroupViewers},
	}
	for _, b := range bindings {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind":       "ClusterRoleBinding",
			"metadata":   map[string]any{"name": b.name},
			"roleRef":    map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": b.role},
			"subjects":   []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": b.group}},
		}}
		if _, err := dyn.Resource(clusterRoleBindings).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("testenv: create ClusterRoleBinding %s: %w", b.name, err)
		}
	}
	return nil
}

var namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// CreateNamespace creates a namespace named after t's test with a random
// suffix, so tests sharing an environment do not see each other's objects.
// Namespaces are never deleted: without kube-controller-manager a deleted
// namespace stays Terminating forever.
func (e *Env) CreateNamespace(t TB) string {
	t.Helper()
	name := namespaceName(t.Name())
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return ""
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"name": name},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := dyn.Resource(namespaces).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("testenv: create namespace %s: %v", name, err)
		return ""
	}
	return name
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TouchConfigMaps creates a ConfigMap in a namespace of its own every
// interval until t ends. The apiserver sends an idle watch its periodic
// BOOKMARK (about once a minute, with the watch cache on) only with a
// resourceVersion newer than the watch's: its watch cache of the resource
// must have moved on, which in a cluster where nothing else changes
// ConfigMaps it does not. Tests that wait for that bookmark call it so
// that they do not depend on what other tests write meanwhile.
func (e *Env) TouchConfigMaps(t TB, interval time.Duration) {
	t.Helper()
	ns := e.CreateNamespace(t)
	dyn, err := dynamic.NewForConfig(e.Config())
	if err != nil {
		t.Fatalf("testenv: %v", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "touch-" + strconv.Itoa(i), "namespace": ns},
			}}
			if _, err := dyn.Resource(configMaps).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				t.Logf("testenv: touch ConfigMaps in %s: %v", ns, err)
			}
		}
	}()
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespaceName turns a test name into a DNS label with a random suffix.
func namespaceName(testName string) string {
	base := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	const maxBase = 63 - 1 - 6
	if len(base) > maxBase {
		base = strings.TrimRight(base[:maxBase], "-")
	}
	if base == "" {
		base = "test"
	}
	return base + "-" + randomHex(3)
}

func randomHex(bytes int) string {
	b := make([]byte, bytes)
	_, _ = rand.Read(b) // never fails, see crypto/rand.Read
	return hex.EncodeToString(b)
}

// portAttempts bounds start-up retries when a free port was taken between
// choosing it and the process binding it.
const portAttempts = 3

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: find a free port: %w", err)
		}
		// Held open until all are chosen, so the n ports differ.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
