// Package crtest records what a controller-runtime reconciler does through
// controller-runtime's fake client, so its test can assert on the history
// of every object it touched with krplytest's assertions — not only on the
// state it left behind.
//
//	func TestReconcile(t *testing.T) {
//		c := crtest.New(t, fake.NewClientBuilder().WithScheme(scheme).WithObjects(web),
//			krplytest.WithResources("deploy", "cm"))
//		r := &Reconciler{Client: c.Client}
//		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}}); err != nil {
//			t.Fatal(err)
//		}
//		krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
//			krplytest.Version{Type: event.Added},
//			krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.replicas": 0}},
//		)
//	}
//
// It is a module of its own (github.com/krply/krply/krplytest/crtest), so
// that controller-runtime stays out of krply's core module.
//
// # How it works
//
// New builds the fake client from the builder the test configured as
// usual (scheme, objects, status subresources, interceptors, indexes) and
// records it with krplytest.RecordClient: a real watch.Collector lists and
// watches the fake client through a read-only dynamic client, into an
// in-memory journal. Discovery is made from the scheme: every kind with a
// list kind, named as the fake client names it
// (meta.UnsafeGuessKindToResource: Deployment → deployments), namespaced
// unless the client's RESTMapper or a list of the built-in cluster-scoped
// kinds says otherwise. Custom resources are recorded like built-in ones
// once their types (or unstructured kinds) are in the scheme.
//
// # Guarantees
//
// The guarantees of krplytest.Recording hold: New returns once every
// stream has its baseline (the builder's objects) and an open watch; Sync
// returns once the journal holds, for every recorded resource, exactly the
// objects the fake client lists, at their resourceVersions (the fake sets
// them); History, ObjectAt, Snapshot and Diff call Sync first; Mark has
// the fake's watches vouch for a time with a bookmark, so a Snapshot of a
// Mark is complete.
//
// # What it does not do
//
// The fake client is not an API server: no admission, defaulting,
// validation or garbage collection, and no gaps. Its managedFields are not
// recorded (its List leaves them out, so its watch events do too), so
// Version.FieldManagers is empty. A label selector
// (watch.WithLabelSelector) filters the fake's watches as an API server's;
// a field selector (watch.WithFieldSelector) filters only its List, and
// needs an index on the builder (WithIndex), as for any List of the fake. Interceptors the builder has see the
// Collector's List and Watch calls too. Test against envtest with
// krplytest.Record for everything an API server does.
package crtest
