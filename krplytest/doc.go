// Package krplytest helps downstream projects test what their code does to
// a Kubernetes cluster by recording it with krply: a real watch.Collector
// records a cluster into an in-memory journal for the duration of a test,
// and assertions check the history of each object, the diff between two
// times and snapshots — every change the code made, not only the state it
// left behind.
//
//	func TestScaleDown(t *testing.T) {
//		c := krplytest.NewCluster(t, krplytest.WithObjects(web))
//		if err := myapp.ScaleDown(ctx, c.Dynamic, "shop"); err != nil {
//			t.Fatal(err)
//		}
//		krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
//			krplytest.Version{Type: event.Added},
//			krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.replicas": 0}},
//		)
//	}
//
// # Which cluster
//
//   - NewCluster: client-go's dynamic fake (Cluster.Dynamic), with the
//     objects of WithObjects and the kinds of BuiltinResources and
//     WithAPIResources.
//   - Record: any cluster a *rest.Config reaches — envtest's, a kind
//     cluster's. It records watch.DefaultResources() unless WithResources
//     says otherwise; use watch.WithNamespaces (through
//     WithCollectorOptions) to keep to a test's namespaces.
//   - RecordClient: a dynamic client and discovery of your own; a fake
//     that implements Bookmarker is waited for and vouches for marks.
//   - controller-runtime's fake client: package
//     github.com/krply/krply/krplytest/crtest, a module of its own so that
//     controller-runtime stays out of krply's core module.
//
// Each gives a Recording (Cluster embeds one): Sync, Mark, History,
// ObjectAt, Snapshot, Diff, Records, EventuallyHistory, Stop.
//
// # Guarantees
//
//   - NewCluster, Record and RecordClient return once every stream has its
//     first baseline (and, on a fake, an open watch), so every write the
//     test makes afterwards is recorded.
//   - Sync returns only when, for every recorded stream, the objects alive
//     in the journal are exactly those the cluster lists, at the same
//     resourceVersion (with the same content on a fake that sets none);
//     otherwise it fails the test with the differences. History, ObjectAt,
//     Snapshot and Diff call it first.
//   - Mark returns a time that separates the writes made before it from
//     those made after, and that every stream covers, so a Snapshot of it
//     is complete: the journal covers a time only up to a stream's last
//     evidence of continuity. On a real cluster that evidence is the
//     Collector's next progress checkpoint (RealProgressInterval); a fake
//     never ends a watch at its timeout, so on a fake Mark has every watch
//     vouch for the time with a BOOKMARK. A time after the last Mark (or
//     write) of a stream is not yet observed.
//   - The assertions compare values, report every mismatch at once with
//     the whole history or diff, and return whether they matched.
//   - EventuallyHistory and Eventually retry an assertion until it holds
//     or the timeout passes, and then fail with the last mismatch: how a
//     test waits for a controller without a sleep.
//
// # Field paths
//
// Version.Changes and ObjectChange.Changes name fields as
// materialize.FieldChange.Path does:
//
//   - A plain name (letters, digits, _, $ and -, not starting with a digit
//     or -) follows a dot: spec.replicas, data.log-level. Any other name is
//     a Go-quoted string in brackets: metadata.annotations["example.com/x"],
//     data["config.yaml"] (Example_keysWithDots).
//   - Items of lists with a merge key (materialize.DefaultMergeKeys:
//     containers, env, volumes by name, ports by containerPort, conditions
//     by type, …) are named by it — containers[name=app].image,
//     ports[containerPort=8080], containers[name="my.app"] for a value
//     that is not a plain name — so a reordering is no change; other lists
//     go by position: args[1] (Example_listItemsByMergeKey).
//   - A map or list that was absent is added whole: one change at its own
//     path whose value is the whole map (metadata.annotations: + {...});
//     one that loses its last key may be removed whole. A key added to a
//     map that exists is a change of its own. An expectation may name the
//     whole map or a path inside it: a path inside a map or list added or
//     removed whole matches the value inside it (Example_mapsAddedWhole).
//
// # Golden files
//
// AssertGolden compares a history, diff, snapshot or object state with a
// file, conventionally under testdata/, in krply's JSON wire schema
// (docs/reference/wire-schema.md), after GoldenJSON replaced what varies between
// runs: times by "<time>", UIDs, resourceVersions, event and baseline IDs
// and hashes by numbered placeholders ("<uid 1>", "<rv 2>"), sequence
// numbers by "<seq>". A difference fails the test with a line diff; a
// missing file fails too. Rewrite the files deliberately, then review them
// with git diff:
//
//	KRPLYTEST_UPDATE=1 go test ./...          # UpdateEnv: every package
//	go test ./pkg -run TestX -krplytest.update # UpdateFlag: one package
//
// The flag is not named "update", so that it never clashes with a flag of
// your own test binary; this package registers it on flag.CommandLine when
// no flag of that name exists yet.
//
// # What it does not do
//
// A fake is not an API server: client-go's dynamic fake assigns no
// resourceVersions, UIDs or timestamps, runs no admission or defaulting,
// and never ends a watch with 410 Gone, so gaps do not happen there. Test
// those against a real control plane with Record. A label selector
// (watch.WithLabelSelector) is applied to the fakes' watches as an API
// server applies it — an object that stops matching is DELETED, one that
// starts matching ADDED — but a field selector is not: client-go's dynamic
// fake ignores it. The dynamic fake panics when more than 100
// watch events wait unread; call Sync now and then in very large loops.
// On a real cluster where something keeps writing, Sync returns once the
// journal caught up with one listing: wait for a controller with
// EventuallyHistory or Eventually.
//
// # Concurrency and cleanup
//
// Call a Recording's or Cluster's methods from the test's goroutine: they
// fail the test with Fatalf. The code under test may use the cluster from
// any goroutine. The Collector runs in a goroutine; the test's Cleanup
// stops it (or Stop does earlier) and closes the store. Nothing needs
// closing by hand. This package does not import package testing: TestingT
// is the small part of testing.TB it needs.
package krplytest
