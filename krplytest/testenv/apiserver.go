package testenv

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv/internal/pki"
)

// sharedFiles are written once per Env and used by each of its apiservers.
type sharedFiles struct {
	binary        string
	ca            *pki.CA
	users         []user
	tokenFile     string
	saSigningKey  string
	saPublicKey   string
	auditPolicies map[string]string // audit policy text → file, written on first use
}

func writeSharedFiles(dir, binary string, cfg *config) (*sharedFiles, error) {
	ca, err := pki.NewCA("krply-testenv-ca")
	if err != nil {
		return nil, err
	}
	f := &sharedFiles{
		binary:        binary,
		ca:            ca,
		users:         cfg.users,
		tokenFile:     filepath.Join(dir, "tokens.csv"),
		saSigningKey:  filepath.Join(dir, "sa.key"),
		saPublicKey:   filepath.Join(dir, "sa.pub"),
		auditPolicies: map[string]string{},
	}
	// token,user,uid,"group1,group2"
	var tokens strings.Builder
	for _, u := range cfg.users {
		fmt.Fprintf(&tokens, "%s,%s,%s,%q\n", u.token, u.name, "uid-"+u.name, strings.Join(u.groups, ","))
	}
	private, public, err := pki.NewSigningKey()
	if err != nil {
		return nil, err
	}
	for path, data := range map[string][]byte{
		f.tokenFile:                  []byte(tokens.String()),
		f.saSigningKey:               private,
		f.saPublicKey:                public,
		filepath.Join(dir, "ca.crt"): ca.CertPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("testenv: %w", err)
		}
	}
	return f, nil
}

func (f *sharedFiles) token(name string) (string, bool) {
	for _, u := range f.users {
		if u.name == name {
			return u.token, true
		}
	}
	return "", false
}

// APIServer is one kube-apiserver process of an Env. Its address and
// credentials survive Restart. Its methods are safe for concurrent use.
type APIServer struct {
	env          *Env
	name         string // kube-apiserver, kube-apiserver-2, …
	host         string // https://127.0.0.1:port
	args         []string
	logPath      string
	auditLogPath string
	startedIn    time.Duration

	mu   sync.Mutex // serializes Restart and stop
	proc *process
}

// Host is the apiserver's URL, https://127.0.0.1:<port>.
func (s *APIServer) Host() string { return s.host }

// Name is the apiserver's name in logs: kube-apiserver for the primary,
// kube-apiserver-2 and so on for those from StartAPIServer.
func (s *APIServer) Name() string { return s.name }

// LogPath is the file that receives the apiserver's output.
func (s *APIServer) LogPath() string { return s.logPath }

// AuditLogPath is the audit log (JSON lines), or "" when auditing is off
// (see WithAudit).
func (s *APIServer) AuditLogPath() string { return s.auditLogPath }

// Args are the command-line flags the apiserver runs with.
func (s *APIServer) Args() []string { return slices.Clone(s.args) }

// Config returns a new rest.Config for the admin user (system:masters).
func (s *APIServer) Config() *rest.Config { return s.ConfigFor(UserAdmin) }

// ConfigFor returns a new rest.Config that authenticates with the bearer
// token of the named user (UserAdmin, UserViewer, … or one added with
// WithUser). The server's certificate is verified against the environment's
// CA, and client-side rate limiting is off (QPS -1). For an unknown user the
// token is one the apiserver rejects (401 Unauthorized).
func (s *APIServer) ConfigFor(user string) *rest.Config {
	token, ok := s.env.files.token(user)
	if !ok {
		token = "unknown-user-" + user
	}
	return &rest.Config{
		Host:            s.host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: slices.Clone(s.env.files.ca.CertPEM)},
		QPS:             -1,
	}
}

// Kubeconfig is the path of a kubeconfig file for this apiserver, with one
// context per user, named after the user; the current context is admin.
func (s *APIServer) Kubeconfig() string {
	return filepath.Join(s.env.dir, s.name, "kubeconfig")
}

func (s *APIServer) writeKubeconfig() error {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Config\nclusters:\n- name: %s\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n",
		s.name, s.host, base64.StdEncoding.EncodeToString(s.env.files.ca.CertPEM))
	b.WriteString("users:\n")
	for _, u := range s.env.files.users {
		fmt.Fprintf(&b, "- name: %s\n  user:\n    token: %s\n", strconv.Quote(u.name), strconv.Quote(u.token))
	}
	b.WriteString("contexts:\n")
	for _, u := range s.env.files.users {
		fmt.Fprintf(&b, "- name: %s\n  context:\n    cluster: %s\n    user: %s\n", strconv.Quote(u.name), s.name, strconv.Quote(u.name))
	}
	fmt.Fprintf(&b, "current-context: %s\n", UserAdmin)
	if err := os.WriteFile(s.Kubeconfig(), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("testenv: write kubeconfig: %w", err)
	}
	return nil
}

// Restart stops this apiserver (SIGTERM, SIGKILL after a grace period) and
// starts it again with the same flags, address and credentials; etcd keeps
// running. It returns once the apiserver is ready again. Open watches end,
// and the watch cache is rebuilt from etcd's current revision.
func (s *APIServer) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("testenv: %s is stopped", s.name)
	}
	s.proc.stop()
	proc := &process{name: s.name, path: s.env.files.binary, args: s.args, logPath: s.logPath}
	s.proc = proc
	if err := proc.start(); err != nil {
		return err
	}
	if err := waitFor(ctx, proc, s.ready); err != nil {
		return err
	}
	return nil
}

func (s *APIServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop()
		s.proc = nil
	}
}

// ready succeeds once /readyz answers ok and the default namespace exists.
func (s *APIServer) ready(ctx context.Context) error {
	client, err := rest.HTTPClientFor(s.Config())
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	for _, path := range []string{"/readyz", "/api/v1/namespaces/default"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.host+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
	}
	return nil
}

// startAPIServer starts an apiserver of e on a free port with the harness's
// flags overridden by extra, and auditing when auditPolicy is not nil.
func (e *Env) startAPIServer(ctx context.Context, extra []string, auditPolicy *string) (*APIServer, error) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, errors.New("testenv: environment is stopped")
	}
	name := "kube-apiserver"
	if n := len(e.apiServers); n > 0 {
		name = fmt.Sprintf("kube-apiserver-%d", n+1)
	}
	s := &APIServer{env: e, name: name, logPath: filepath.Join(e.dir, name+".log")}
	e.apiServers = append(e.apiServers, s)
	e.mu.Unlock()

	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	serving, err := e.files.ca.NewServingCert(name)
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(certFile, serving.CertPEM, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := os.WriteFile(keyFile, serving.KeyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	flags := []string{
		"--etcd-servers=" + e.etcd.url,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--token-auth-file=" + e.files.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + e.files.saPublicKey,
		"--service-account-signing-key-file=" + e.files.saSigningKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// No kube-controller-manager creates the "default" ServiceAccount that
		// this admission plugin demands of every Pod.
		"--disable-admission-plugins=ServiceAccount",
		// Several apiservers share 127.0.0.1; reconciling the "kubernetes"
		// Endpoints would make them fight over its port.
		"--endpoint-reconciler-type=none",
		// On SIGTERM, wait at most 2s (not --request-timeout, a minute) for
		// open watches before exiting, so Restart is quick.
		"--shutdown-send-retry-after=true",
		// History is compacted only by Env.Compact, never behind a test's back.
		"--etcd-compaction-interval=0",
		"--profiling=false",
	}
	if auditPolicy != nil {
		policyFile, err := e.files.auditPolicyFile(e.dir, *auditPolicy)
		if err != nil {
			return nil, err
		}
		s.auditLogPath = filepath.Join(dir, "audit.log")
		flags = append(flags,
			"--audit-policy-file="+policyFile,
			"--audit-log-path="+s.auditLogPath,
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
		)
	}
	args, err := mergeFlags(flags, extra)
	if err != nil {
		return nil, err
	}

	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, err
		}
		s.host = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		s.args = append(slices.Clone(args), "--secure-port="+strconv.Itoa(ports[0]))
		proc := &process{name: name, path: e.files.binary, args: s.args, logPath: s.logPath}
		s.mu.Lock()
		s.proc = proc
		s.mu.Unlock()
		if err := proc.start(); err != nil {
			return nil, err
		}
		err = waitFor(ctx, proc, s.ready)
		if err == nil {
			return s, s.writeKubeconfig()
		}
		s.stop()
		lastErr = err
		if !errors.Is(err, errExited) || !proc.portInUse() {
			return nil, err
		}
	}
	return nil, lastErr
}

func (f *sharedFiles) auditPolicyFile(dir, policy string) (string, error) {
	if path, ok := f.auditPolicies[policy]; ok {
		return path, nil
	}
	path := filepath.Join(dir, fmt.Sprintf("audit-policy-%d.yaml", len(f.auditPolicies)+1))
	if err := os.WriteFile(path, []byte(policy), 0o600); err != nil {
		return "", fmt.Errorf("testenv: write audit policy: %w", err)
	}
	f.auditPolicies[policy] = path
	return path, nil
}

// splitFlag splits "--name=value" (or "--name") into its name and value.
func splitFlag(flag string) (name, value string, err error) {
	if !strings.HasPrefix(flag, "--") || len(flag) < 3 {
		return "", "", fmt.Errorf("testenv: flag %q: want --name=value", flag)
	}
	name, value, _ = strings.Cut(flag[2:], "=")
	if name == "etcd-servers" {
		return "", "", fmt.Errorf("testenv: flag %q: the harness sets --etcd-servers itself", flag)
	}
	if name == "secure-port" {
		return "", "", fmt.Errorf("testenv: flag %q: the harness chooses the port", flag)
	}
	return name, value, nil
}

// mergeFlags returns defaults with every flag that extra sets again replaced
// in place, followed by extra's other flags in order; the last value given
// for a name wins.
func mergeFlags(defaults, extra []string) ([]string, error) {
	out := slices.Clone(defaults)
	index := map[string]int{}
	for i, f := range out {
		name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		index[name] = i
	}
	for _, f := range extra {
		name, _, err := splitFlag(f)
		if err != nil {
			return nil, err
		}
		if i, ok := index[name]; ok {
			out[i] = f
			continue
		}
		index[name] = len(out)
		out = append(out, f)
	}
	return out, nil
}
