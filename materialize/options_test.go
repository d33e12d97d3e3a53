package materialize_test

import (
	"reflect"
	"testing"

	"github.com/krply/krply/materialize"
)

// An option a call does not take is an error, not ignored: the options
// that select versions (Since, Until, FromStream, Limit) are History's
// alone, so Diff and CompareObjects, which take only CompareOptions, do not
// compile with them; the options that say how to compare are
// CompareOptions, which History takes too.
func TestOptionsOnlyWhereTheyApply(t *testing.T) {
	historyOnly := map[string]materialize.HistoryOption{
		"Since":      materialize.Since(at(1)),
		"Until":      materialize.Until(at(2)),
		"FromStream": materialize.FromStream("s"),
		"Limit":      materialize.Limit(1),
		"After":      materialize.After("e"),
	}
	for name, o := range historyOnly {
		if _, ok := o.(materialize.CompareOption); ok {
			t.Errorf("%s is a CompareOption: Diff would take it and ignore it", name)
		}
	}
	compare := map[string]materialize.CompareOption{
		"IncludeStatus":         materialize.IncludeStatus(true),
		"WithIgnoreRules":       materialize.WithIgnoreRules(materialize.IgnoreRule{JSONPointers: []string{"/spec/x"}}),
		"WithoutDefaultIgnores": materialize.WithoutDefaultIgnores(),
		"WithMergeKeys":         materialize.WithMergeKeys("rules", "id"),
	}
	for name, o := range compare {
		if _, ok := any(o).(materialize.HistoryOption); !ok {
			t.Errorf("%s is not a HistoryOption: History could not compare as asked", name)
		}
	}

	compareOpts := reflect.TypeFor[[]materialize.CompareOption]()
	historyOpts := reflect.TypeFor[[]materialize.HistoryOption]()
	for name, fn := range map[string]reflect.Type{
		"Materializer.Diff":    reflect.TypeOf((*materialize.Materializer).Diff),
		"CompareObjects":       reflect.TypeOf(materialize.CompareObjects),
		"Materializer.History": reflect.TypeOf((*materialize.Materializer).History),
	} {
		want := compareOpts
		if name == "Materializer.History" {
			want = historyOpts
		}
		if got := fn.In(fn.NumIn() - 1); !fn.IsVariadic() || got != want {
			t.Errorf("%s takes ...%s, want ...%s", name, got.Elem(), want.Elem())
		}
	}
}
