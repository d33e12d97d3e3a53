package truth

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/memory"
)

// Check a journal against the oracle of its workload, then the same journal
// as a Collector would have written it had it skipped the relist after the
// gap.
func ExampleCheck() {
	s := build() // an oracle, and the journal of one ConfigMap stream with a 410 gap
	cfg := Config{ClusterID: testCluster, Namespaces: []string{testNS}, Resources: []schema.GroupResource{{Resource: "configmaps"}}}
	ctx := context.Background()

	for _, broken := range []bool{false, true} {
		recs := s.records
		if broken {
			recs = slices.DeleteFunc(slices.Clone(recs), func(r event.Record) bool {
				return r.Type == event.TypeGap || r.BaselineID == "b1"
			})
		}
		st := memory.New()
		if _, err := st.Append(ctx, recs); err != nil {
			fmt.Println(err)
			return
		}
		r, err := Check(ctx, s.oracle, st, cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("versions %d, recorded %d, inside gaps %d, inferred deletions %d, mismatches %v\n",
			r.Versions, r.Recorded, r.InsideGaps, r.Inferred, r.Kinds())
		_ = st.Close()
	}
	// Output:
	// versions 9, recorded 6, inside gaps 3, inferred deletions 1, mismatches map[]
	// versions 9, recorded 6, inside gaps 0, inferred deletions 0, mismatches map[lost:3 object-at:2 snapshot:2]
}
