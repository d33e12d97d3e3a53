package krplytest_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
)

// BenchmarkNewCluster is the cost a test pays for a recorded fake cluster
// with every built-in resource and ten objects.
func BenchmarkNewCluster(b *testing.B) {
	var objs []*unstructured.Unstructured
	for i := range 10 {
		objs = append(objs, configMap("shop", fmt.Sprintf("cm-%d", i), "v"))
	}
	for b.Loop() {
		b.StopTimer()
		r := &recorder{}
		b.StartTimer()
		krplytest.NewCluster(r, krplytest.WithObjects(objs[0], objs[1], objs[2], objs[3], objs[4], objs[5], objs[6], objs[7], objs[8], objs[9]))
		b.StopTimer()
		r.Done()
		if len(r.Errors) > 0 {
			b.Fatal(r.Errors)
		}
		b.StartTimer()
	}
}

// BenchmarkWriteAndSync is the cost of one write until the journal has it.
func BenchmarkWriteAndSync(b *testing.B) {
	c := krplytest.NewCluster(b, krplytest.WithResources("cm"), krplytest.WithObjects(configMap("shop", "settings", "0")))
	i := 0
	for b.Loop() {
		i++
		c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, fmt.Sprint(i), "data", "key")
		})
		c.Sync()
	}
}
