package krplytest_test

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
)

// exampleT stands in for the *testing.T a real test has.
type exampleT struct{ cleanups []func() }

func (t *exampleT) Helper()                           {}
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, args ...any) { t.report(format, args...) }
func (t *exampleT) Fatalf(format string, args ...any) { t.report(format, args...) }

// report prints a failure without its first line, which names times that
// change from run to run.
func (t *exampleT) report(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if _, rest, ok := strings.Cut(msg, "\n"); ok {
		msg = rest
	}
	fmt.Fprintln(os.Stdout, msg)
}
func (t *exampleT) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

func Example() {
	t := &exampleT{}
	defer t.done()

	c := krplytest.NewCluster(t, krplytest.WithObjects(deployment("shop", "web", 1)))

	// The code under test would receive c.Dynamic; here the test scales
	// the Deployment itself.
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	})

	h := c.History("deploy", "shop", "web")
	ok := krplytest.AssertHistory(t, h,
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.replicas": 3}},
	)
	fmt.Println("history as expected:", ok)
	for _, v := range h.Versions() {
		fmt.Println(strings.TrimSpace(fmt.Sprint(v.WatchType, " ", v.Origin, " ", krplytest.FormatChanges(v.Changes))))
	}
	// Output:
	// history as expected: true
	// ADDED baseline
	// MODIFIED watch spec.replicas: 1 -> 3
}

func ExampleAssertDiff() {
	t := &exampleT{}
	defer t.done()

	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(configMap("shop", "settings", "a")))
	before := c.Mark()
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "b", "data", "key")
	})
	after := c.Mark()

	// A wrong expectation reports the whole diff.
	krplytest.AssertDiff(t, c.Diff(before, after), krplytest.ObjectChange{
		Namespace: "shop", Name: "settings", Changes: map[string]any{"data.key": "c"},
	})
	// Output:
	//   configmaps shop/settings: data.key changed to "b", want "c"
	// diff:
	//   changed configmaps shop/settings  data.key: "a" -> "b"
}
