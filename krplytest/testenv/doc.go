// Package testenv runs a real Kubernetes control plane — etcd and
// kube-apiserver as local processes on loopback — for krply's integration
// tests, so watch semantics, RBAC denials, server-side apply and dry runs are
// tested against the real thing rather than a fake.
//
// # Binaries
//
// The binaries come from the folder named by KUBEBUILDER_ASSETS (the envtest
// convention). `make testbin` builds etcd and kube-apiserver from the Go
// modules pinned in tools/testbin into a cache folder, once, and
// hack/testbin.sh prints that folder; `make test` sets KUBEBUILDER_ASSETS
// and KRPLY_REQUIRE_TESTENV=1 itself. When the binaries are missing, Start
// and Shared skip the test, or fail it when KRPLY_REQUIRE_TESTENV is true,
// with a message naming `make testbin`. To run the tests by hand:
//
//	export KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -n 1)
//	go test ./krplytest/testenv/...
//
// # Usage
//
// A test that needs a control plane of its own calls Start; everything is
// stopped when the test ends (the apiserver first, then etcd):
//
//	env := testenv.Start(t)
//	admin := env.Config()                       // *rest.Config, system:masters
//	viewer := env.ConfigFor(testenv.UserViewer) // no Secrets, no writes
//	kubeconfig := env.Kubeconfig()              // a file, one context per user
//	dyn, err := dynamic.NewForConfig(admin)
//
// Starting one takes 3–4 seconds, so the tests of a package usually share
// one, started on first use and stopped after the last test:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Shared(t)
//		ns := env.CreateNamespace(t)
//		…
//	}
//
// # What the control plane is
//
// One etcd (in-memory speed: --unsafe-no-fsync) and one kube-apiserver with
// RBAC authorization, a static token file (users UserAdmin, UserAlice,
// UserBob, UserViewer, UserNobody and those of WithUser), a CA made for the
// environment, and service-account signing keys. There is no
// kube-controller-manager, scheduler or kubelet: nothing reconciles, so no
// Pod runs, no garbage collector deletes dependents, a deleted namespace
// stays Terminating, and the built-in aggregated roles ("view", "edit") stay
// empty — the harness binds the groups to the roles they aggregate instead.
// kube-apiserver's periodic etcd compaction is off; only Compact compacts.
//
// Helpers for the situations krply must survive:
//
//   - Env.Compact compacts etcd to its current revision. On an apiserver with
//     the watch cache on, watches keep being served from the cache (no 410).
//   - Env.StartAPIServer adds an apiserver on the same etcd with other flags,
//     e.g. "--watch-cache=false": there, a watch or an exact list from a
//     resourceVersion older than the last Compact fails with 410 Expired.
//   - APIServer.Restart restarts one apiserver; its watch cache is rebuilt,
//     and a watch from a resourceVersion older than the rebuild gets 410.
//   - WithAudit writes an audit log (JSON lines) at APIServer.AuditLogPath.
//   - Package faultproxy puts a fault-injecting proxy in front of any of
//     these apiservers.
//
// # Guarantees and limits
//
// Every process listens on 127.0.0.1 on a port chosen at start; nothing is
// exposed beyond loopback. On Linux the processes are killed when the test
// binary dies, so a panic or timeout leaves nothing running. The
// environment's folder (logs, certificates, etcd data) is removed when the
// test ends; its logs are kept when the test failed, and everything is kept
// when KRPLY_TESTENV_KEEP is true.
//
// Env and APIServer methods are safe for concurrent use. Tests sharing an
// environment see each other's objects and each other's Compact and Restart;
// use CreateNamespace for isolation, and Start for tests that restart or
// compact in ways other tests must not notice.
package testenv
