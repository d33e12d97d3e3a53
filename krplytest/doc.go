// Package krplytest helps downstream projects test what their code does to
// a Kubernetes cluster by recording it with krply: a fake cluster (client-go's
// dynamic fake), a real watch.Collector recording it into an in-memory
// journal, sync helpers, and assertions on histories, diffs and snapshots.
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
// # Guarantees
//
//   - NewCluster returns once every stream has its first baseline and an
//     open watch, so every write the test makes afterwards is recorded.
//   - Sync returns only when, for every recorded resource, the objects alive
//     in the journal are exactly those of the fake, with the same content;
//     otherwise it fails the test with the differences. History, ObjectAt,
//     Snapshot and Diff call it first. Mark returns a time that separates
//     the writes made before it from those made after, and that every
//     stream covers: it has the fake vouch for it with a BOOKMARK on every
//     watch, since the journal covers a time only up to a stream's last
//     evidence of continuity and a fake, unlike an apiserver, never ends a
//     watch at its timeout. A time after the last Mark (or write) of a
//     stream is not yet observed.
//   - The assertions compare values, report every mismatch at once together
//     with the whole history or diff, and return whether they matched.
//
// # What it does not do
//
// The fake is not an API server: it assigns no resourceVersions, UIDs or
// timestamps, runs no admission or defaulting, and never ends a watch with
// 410 Gone, so gaps do not happen here. Test those against a real control
// plane. Sync cannot tell an object a label selector filters out from one
// not recorded yet: with watch.WithLabelSelector, use Collector.Status and
// the journal instead. The fake panics when more than 100 watch events wait
// unread; call Sync now and then in very large loops.
//
// # Concurrency and cleanup
//
// Call a Cluster's methods from the test's goroutine: they fail the test
// with Fatalf. The code under test may use Dynamic from any goroutine.
// NewCluster starts the Collector in a goroutine; the test's Cleanup stops
// it (or Stop does earlier) and closes the store. Nothing needs closing by
// hand. This package does not import package testing: TestingT is the small
// part of testing.TB it needs.
package krplytest
