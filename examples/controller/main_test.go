package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
)

// childEnv makes the test binary run main instead of the tests: the
// command runs as a real separate process, signals and exit code included.
const childEnv = "KRPLY_CONTROLLER_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(testenv.RunMain(m, testenv.WithUser(recorderUser)))
}

// recorderUser is the identity the command runs as: it has no rights until
// a test grants them.
const recorderUser = "krply-recorder"

// command is the command running as a child process.
type command struct {
	t    *testing.T
	cmd  *exec.Cmd
	log  string
	done chan error
}

// start runs the command with args in a child process; the test's end
// kills it if it still runs.
func start(t *testing.T, args ...string) *command {
	t.Helper()
	c := &command{t: t, log: filepath.Join(t.TempDir(), "controller.log"), done: make(chan error, 1)}
	out, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], args...)
	c.cmd.Env = append(os.Environ(), childEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.done <- c.cmd.Wait()
		out.Close()
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(c.log)
			t.Logf("controller output:\n%s", b)
		}
	})
	return c
}

// exit waits for the command to exit and returns its exit code.
func (c *command) exit(timeout time.Duration) int {
	c.t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return exitErr.ExitCode()
		}
		if err != nil {
			c.t.Fatalf("waiting for the command: %v", err)
		}
		return 0
	case <-time.After(timeout):
		c.t.Fatalf("the command did not exit within %s", timeout)
		return -1
	}
}

func (c *command) output() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// freeAddrs returns n distinct loopback addresses with ports free right now.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close() // held until all are chosen, so they differ
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// get returns the status code and body of an HTTP GET, or code 0 when the
// server does not answer.
func get(url string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// eventually polls cond every 100ms until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeKubeconfig writes a kubeconfig that authenticates as user.
func writeKubeconfig(t *testing.T, env *testenv.Env, user string) string {
	t.Helper()
	cfg := env.ConfigFor(user)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["env"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts[user] = &clientcmdapi.Context{Cluster: "env", AuthInfo: user}
	kc.CurrentContext = user
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// grant binds user to a new role with rules: a Role in ns, or a
// ClusterRole when ns is "".
func grant(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	meta := metav1.ObjectMeta{Name: name, Namespace: ns}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	var err error
	if ns == "" {
		if _, err = cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{})
		}
	} else {
		if _, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err == nil {
			_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		t.Fatalf("granting %s: %v", name, err)
	}
}

// walGone fails t unless the journal at path was closed: closing SQLite's
// last connection checkpoints the write-ahead log and removes it, a process
// that exits without closing leaves it behind.
func walGone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("journal: %v", err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s-wal exists after the command exited (stat: %v): the journal was not closed", path, err)
	}
}

// leaderElectionEnv returns the shared control plane, a namespace of the
// test's own for the lease, and an admin client.
func leaderElectionEnv(t *testing.T) (*testenv.Env, string, kubernetes.Interface) {
	t.Helper()
	env := testenv.Shared(t)
	admin, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return env, env.CreateNamespace(t), admin
}

// The command against a real control plane: a standby is ready and does
// not record; once elected, /readyz answers 500 while the Collector is not
// synced (its only stream is denied) and 200 once it is; SIGTERM ends it
// with exit code 0, the lease released and the journal closed.
func TestReadyzFollowsSyncOnTheLeader(t *testing.T) {
	env, ns, admin := leaderElectionEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The rights leader election needs in its namespace, and nothing else.
	grant(t, ctx, admin, ns, "krply-leader-election", recorderUser,
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	// Another replica holds the lease.
	leases := admin.CoordinationV1().Leases(ns)
	now := metav1.NewMicroTime(time.Now())
	if _, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "krply-recorder"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other-replica"), LeaseDurationSeconds: ptr.To[int32](3600),
			AcquireTime: &now, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	store := filepath.Join(t.TempDir(), "krply.db")
	addrs := freeAddrs(t, 2)
	probes, metricsAddr := addrs[0], addrs[1]
	cmd := start(t, "--kubeconfig", writeKubeconfig(t, env, recorderUser), "--store", store, "--resource", "cm",
		"--leader-election-namespace", ns, "--health-probe-bind-address", probes, "--metrics-bind-address", metricsAddr)
	readyz, metricsURL := "http://"+probes+"/readyz", "http://"+metricsAddr+"/metrics"

	// A standby: live, ready, not recording.
	eventually(t, time.Minute, "/healthz 200", func() bool { code, _ := get("http://" + probes + "/healthz"); return code == http.StatusOK })
	time.Sleep(3 * time.Second) // past leader election's first tries (every 2s)
	if code, body := get(readyz); code != http.StatusOK {
		t.Fatalf("standby: /readyz = %d %q, want 200", code, body)
	}
	if code, body := get(metricsURL); code != http.StatusOK || strings.Contains(body, "krply_stream_events_total") || !strings.Contains(body, "krply_synced 0") {
		t.Fatalf("standby: /metrics = %d, has krply_stream_events_total: %v, krply_synced 0: %v; the Collector runs without the lease",
			code, strings.Contains(body, "krply_stream_events_total"), strings.Contains(body, "krply_synced 0"))
	}
	if l, err := leases.Get(ctx, "krply-recorder", metav1.GetOptions{}); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "other-replica" {
		t.Fatalf("lease = %+v, %v; want it still held by other-replica", l, err)
	}

	// The other replica goes away: this one is elected and starts the
	// Collector, whose configmaps stream is denied.
	if err := leases.Delete(ctx, "krply-recorder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var detail string
	eventually(t, time.Minute, "/readyz/krply-synced naming the denied stream", func() bool {
		var code int
		code, detail = get(readyz + "/krply-synced")
		return code == http.StatusInternalServerError && strings.Contains(detail, "unavailable")
	})
	for _, want := range []string{"watch: not synced", "/v1/configmaps is unavailable", "403"} {
		if !strings.Contains(detail, want) {
			t.Fatalf("/readyz/krply-synced = %q, want it to say %q", detail, want)
		}
	}
	if code, body := get(readyz); code != http.StatusInternalServerError || !strings.Contains(body, "[-]krply-synced failed") {
		t.Fatalf("leader, not synced: /readyz = %d %q, want 500 with krply-synced failed", code, body)
	}
	l, err := leases.Get(ctx, "krply-recorder", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	if holder == "" || holder == "other-replica" {
		t.Fatalf("lease holder = %q, want this replica", holder)
	}

	// Access granted: the stream takes its baseline and /readyz turns 200.
	grant(t, ctx, admin, "", "krply-recorder-"+ns, recorderUser,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}})
	eventually(t, time.Minute, "/readyz 200", func() bool { code, _ := get(readyz); return code == http.StatusOK })
	if code, body := get(readyz + "/krply-synced"); code != http.StatusOK || body != "ok" {
		t.Fatalf("synced: /readyz/krply-synced = %d %q, want 200 ok", code, body)
	}
	code, body := get(metricsURL)
	for _, want := range []string{`krply_stream_baselines_total{group="",namespace="",resource="configmaps",source_cluster="`, "\nkrply_relist_duration_seconds_count 1\n", "\nkrply_build_info{"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("leader: /metrics = %d, lacks %q:\n%s", code, want, body)
		}
	}

	// A rollout stops the pod: exit 0, the lease released, the journal
	// closed and holding the baseline.
	if err := cmd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := cmd.exit(time.Minute); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if l, err = leases.Get(ctx, "krply-recorder", metav1.GetOptions{}); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "" {
		t.Fatalf("lease after exit = %+v, %v; want it released (no holder)", l, err)
	}
	// A rollout is no failure: the shutdown logs no error and no stack
	// trace.
	out := cmd.output()
	stop := out[strings.LastIndex(out, "krply-synced"):]
	for _, bad := range []string{"ERROR", "leader election lost", ".go:"} {
		if strings.Contains(stop, bad) {
			t.Errorf("the shutdown logged %q:\n%s", bad, stop)
		}
	}
	if !strings.Contains(stop, "leader lease released at the stop") {
		t.Errorf("the shutdown does not say the lease was released:\n%s", stop)
	}
	walGone(t, store)
	j, err := krply.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(streams) != 1 || streams[0].Stream.Resource != "configmaps" || streams[0].LastBaselineID == "" {
		t.Fatalf("journal streams = %+v, want the configmaps stream with a complete baseline", streams)
	}
}

// A Collector that fails (a resource the server does not serve) makes the
// command exit 1 with the error, and the journal is closed all the same.
func TestFailureClosesTheJournal(t *testing.T) {
	env := testenv.Shared(t)
	store := filepath.Join(t.TempDir(), "krply.db")
	cmd := start(t, "--kubeconfig", writeKubeconfig(t, env, testenv.UserAdmin), "--store", store, "--resource", "cm,nosuchresource",
		"--leader-elect=false", "--health-probe-bind-address", "0", "--metrics-bind-address", "0")
	if code := cmd.exit(2 * time.Minute); code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if out := cmd.output(); !strings.Contains(out, "controller: ") || !strings.Contains(out, "nosuchresource") {
		t.Fatalf("output does not end with the error naming the resource:\n%s", out)
	}
	walGone(t, store)
}

// Losing the lease ends the command with exit code 1, without waiting for
// the manager's graceful shutdown, and the journal is closed all the same.
func TestLeaseLostClosesTheJournal(t *testing.T) {
	env, ns, admin := leaderElectionEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store := filepath.Join(t.TempDir(), "krply.db")
	probes := freeAddrs(t, 1)[0]
	cmd := start(t, "--kubeconfig", writeKubeconfig(t, env, testenv.UserAdmin), "--store", store, "--resource", "cm",
		"--leader-election-namespace", ns, "--health-probe-bind-address", probes, "--metrics-bind-address", "0")
	leases := admin.CoordinationV1().Leases(ns)
	eventually(t, time.Minute, "elected", func() bool {
		l, err := leases.Get(ctx, "krply-recorder", metav1.GetOptions{})
		return err == nil && ptr.Deref(l.Spec.HolderIdentity, "") != ""
	})
	eventually(t, time.Minute, "/readyz 200", func() bool { code, _ := get("http://" + probes + "/readyz"); return code == http.StatusOK })

	// Another replica takes the lease over: this one cannot renew it. (The
	// update conflicts when it renewed the lease since the Get: retried.)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := leases.Get(ctx, "krply-recorder", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = ptr.To("other-replica"), ptr.To[int32](3600)
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if code := cmd.exit(time.Minute); code != 1 {
		t.Fatalf("exit code %d after losing the lease, want 1", code)
	}
	if out := cmd.output(); !strings.Contains(out, "controller: leader election lost") {
		t.Fatalf("output does not end with the lost lease:\n%s", out)
	}
	walGone(t, store)
}
