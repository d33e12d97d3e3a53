package browsertest

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/krply/krply/server/ui"
)

// TestShape runs the UI's data shaping (assets/shape.js) in the browser on
// the wire schema's JSON and checks what it makes of the cases the recorded
// journal does not show: a stream unavailable (403), a version whose only
// author is a field manager, a scored audit match, YAML quoting, and the
// line diff.
func TestShape(t *testing.T) {
	srv := httptest.NewServer(ui.Handler())
	t.Cleanup(srv.Close)
	b := newBrowser(t, srv.URL)
	b.do("open", chromedp.Navigate(srv.URL+"/shape.js"))

	run := func(expr string, out any) {
		t.Helper()
		s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`import('/shape.js').then(m => JSON.stringify((`+expr+`)(m)))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if err := json.Unmarshal([]byte(s), out); err != nil {
			t.Fatalf("%s: %s: %v", expr, s, err)
		}
	}

	// Coverage: before the first baseline, covered, a 403 until the next
	// baseline, covered, a gap until the relist, covered, not yet observed.
	var segs []struct {
		From, To float64
		Kind     string
	}
	run(`m => m.coverageSegments([
		{type: 'baseline', observedAt: '2025-01-01T00:00:10Z', baseline: {id: 'b1', phase: 'end', itemCount: 2}},
		{type: 'coverage_change', observedAt: '2025-01-01T00:00:20Z', coverage: {available: false, reason: '403 Forbidden', code: 403}},
		{type: 'coverage_change', observedAt: '2025-01-01T00:00:30Z', coverage: {available: true, reason: 'access restored'}},
		{type: 'baseline', observedAt: '2025-01-01T00:00:35Z', baseline: {id: 'b2', phase: 'end'}},
		{type: 'gap', observedAt: '2025-01-01T00:00:50Z', gap: {from: '2025-01-01T00:00:40Z', to: '2025-01-01T00:00:50Z', reason: '410 Gone'}},
		{type: 'baseline', observedAt: '2025-01-01T00:00:55Z', baseline: {id: 'b3', phase: 'end', closesGap: 'g'}},
	], {start: Date.parse('2025-01-01T00:00:00Z'), end: Date.parse('2025-01-01T00:01:40Z'), evidenceUntil: Date.parse('2025-01-01T00:01:20Z')}).segments
		.map(s => ({from: (s.from - Date.parse('2025-01-01T00:00:00Z')) / 1000, to: (s.to - Date.parse('2025-01-01T00:00:00Z')) / 1000, kind: s.kind}))`, &segs)
	want := []struct {
		From, To float64
		Kind     string
	}{{0, 10, "before"}, {10, 20, "covered"}, {20, 35, "unavailable"}, {35, 40, "covered"}, {40, 55, "gap"}, {55, 80, "covered"}, {80, 100, "unobserved"}}
	if !reflect.DeepEqual(segs, want) {
		t.Errorf("coverage segments\n got %+v\nwant %+v", segs, want)
	}

	// Who: the audit log's user (exact only on a watch event), else the
	// field managers of the changes, labelled as such; nobody for a relist
	// item without audit or an inferred deletion.
	type whoT struct{ Label, Kind, Tag string }
	var who []whoT
	run(`m => [
		{origin: 'watch', provenance: [{user: 'alice', confidence: 1, verb: 'patch'}]},
		{origin: 'watch', provenance: [{user: 'bob', confidence: 0.6}]},
		{origin: 'baseline', provenance: [{user: 'bob', confidence: 0.9, rule: 'seen-through-relist'}]},
		{origin: 'watch', changes: [{path: 'spec.replicas', op: 'replace', before: 1, after: 2, fieldManager: {manager: 'kubectl-edit', operation: 'Update'}}]},
		{origin: 'baseline', changes: [{path: 'data.x', op: 'add', after: '1'}]},
		{origin: 'inferred'},
	].map(v => { const w = m.who(v); return {label: w.label, kind: w.kind, tag: w.tag || ''} })`, &who)
	wantWho := []whoT{
		{"alice", "exact", "audit: exact"},
		{"bob", "scored", "audit: scored 60%"},
		{"bob", "scored", "audit: seen through the relist, 90%"},
		{"kubectl-edit", "manager", "field manager"},
		{"nobody known: seen by a relist", "relist", ""},
		{"nobody known: inferred deletion", "inferred", ""},
	}
	if !reflect.DeepEqual(who, wantWho) {
		t.Errorf("who\n got %+v\nwant %+v", who, wantWho)
	}

	// YAML: strings that would read as another type are quoted.
	var yaml string
	run(`m => m.toYAML({metadata: {name: 'web', labels: {'app.kubernetes.io/name': 'web'}}, data: {on: 'yes', n: '1', empty: '', text: 'a: b', list: []}, spec: {replicas: 2, ports: [{port: 80}]}})`, &yaml)
	wantYAML := "metadata:\n  name: web\n  labels:\n    app.kubernetes.io/name: web\ndata:\n  \"on\": \"yes\"\n  n: \"1\"\n  empty: \"\"\n  text: \"a: b\"\n  list: []\nspec:\n  replicas: 2\n  ports:\n  - port: 80"
	if yaml != wantYAML {
		t.Errorf("YAML\n got %q\nwant %q", yaml, wantYAML)
	}

	// The line diff pairs a replaced line and keeps the rest aligned.
	var rows []struct{ A, B, Op string }
	run(`m => m.lineDiff('a\nb\nc\nd', 'a\nB\nc\nd\ne').map(r => ({a: r.a || '', b: r.b || '', op: r.op}))`, &rows)
	wantRows := []struct{ A, B, Op string }{{"a", "a", "same"}, {"b", "B", "chg"}, {"c", "c", "same"}, {"d", "d", "same"}, {"", "e", "add"}}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("line diff\n got %+v\nwant %+v", rows, wantRows)
	}
	b.checkClean()
}
