package materialize

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// ruleOnly reports whether a stream selects its objects by its recording
// rule alone, with no label or field selector: the server's selectors
// make an object that leaves them look deleted, a rule's exclusions do
// not.
func ruleOnly(st event.Stream) bool {
	return st.Rule() != "" && strings.HasPrefix(st.Selector, "labels:;fields:"+event.RuleSeparator)
}

// ruleScope says which objects a stream with a recording rule records.
func ruleScope(st event.Stream) string {
	return fmt.Sprintf("stream %s records only the objects for which its rule `%s` holds", st.ID(), st.Rule())
}

// excludedByRule says why an object is unknown to a covered stream with a
// recording rule, given the object's last record (nil when none).
func excludedByRule(st event.Stream, last *event.Record) string {
	if last != nil && last.IsExclusion() && last.StreamID == st.ID() {
		return fmt.Sprintf("%s at %s: %s", last.Inferred.Reason, last.ObservedAt.UTC().Format(time.RFC3339Nano), ruleScope(st))
	}
	return fmt.Sprintf("%s: %s, and has no version of this object that matched", event.ExcludedByRule, ruleScope(st))
}

// ruleMissing returns, for each stream with a recording rule, the part of
// the scope it leaves out: the objects its rule does not match.
func ruleMissing(streams []storage.StreamStatus) []MissingStream {
	var out []MissingStream
	for _, status := range streams {
		st := status.Stream
		if st.Rule() == "" {
			continue
		}
		out = append(out, MissingStream{
			StreamID:  st.ID(),
			Resource:  schema.GroupResource{Group: st.Group, Resource: st.Resource},
			Namespace: st.Namespace,
			Reason:    fmt.Sprintf("%s: %s; the others are not recorded", event.ExcludedByRule, ruleScope(st)),
		})
	}
	return out
}
