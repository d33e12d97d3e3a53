package browsertest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/krply/krply/event"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

// Size of the journal of TestTimelineAtScale.
const (
	scaleNamespaces = 10
	scalePerNS      = 1000   // objects per namespace: 10,000 in all
	scaleChanges    = 100000 // baseline items, modifications and deletions
)

// scaleJournal writes a journal of 10,000 ConfigMaps in 10 namespaces and
// 100,000 changes over an hour: a baseline of every object, modifications,
// deletions, and a gap in two of the streams. It is an in-memory journal:
// what is measured is the page, and a SQLite journal of this size takes
// minutes to write under the race detector (make test).
func scaleJournal(t *testing.T) *memory.Store {
	t.Helper()
	ctx := context.Background()
	j := memory.New()
	t.Cleanup(func() { _ = j.Close() })
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var recs []event.Record
	flush := func() {
		if _, err := j.Append(ctx, recs); err != nil {
			t.Fatalf("append: %v", err)
		}
		recs = recs[:0]
	}
	rv := 1000
	next := func() string { rv++; return strconv.Itoa(rv) }
	changes := 0
	streams := make([]event.Stream, scaleNamespaces)
	for n := range streams {
		s := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("ns-%d", n)}
		streams[n] = s
		items := make([]storagetest.Item, scalePerNS)
		for i := range items {
			name, r := fmt.Sprintf("cm-%04d", i), next()
			items[i] = storagetest.Item{Ref: storagetest.Ref(s, "ConfigMap", s.Namespace, name, "uid-"+s.Namespace+"-"+name, r),
				Object: storagetest.ConfigMap(s.Namespace, name, "uid-"+s.Namespace+"-"+name, r, map[string]string{"v": "0"})}
		}
		recs = append(recs, storagetest.Baseline(s, "b-"+s.Namespace, t0, next(), items)...)
		changes += len(items)
		flush()
	}
	// The rest: modifications spread over the hour, every tenth object
	// deleted at the end.
	deletions := scaleNamespaces * scalePerNS / 10
	mods := scaleChanges - changes - deletions
	step := time.Hour / time.Duration(mods+1)
	for k := 0; k < mods; k++ {
		n, i := k%scaleNamespaces, (k/scaleNamespaces)%scalePerNS
		s := streams[n]
		name, r := fmt.Sprintf("cm-%04d", i), next()
		uid := "uid-" + s.Namespace + "-" + name
		recs = append(recs, storagetest.Event(s, event.Modified, storagetest.Ref(s, "ConfigMap", s.Namespace, name, uid, r),
			storagetest.ConfigMap(s.Namespace, name, uid, r, map[string]string{"v": strconv.Itoa(k)}), t0.Add(time.Duration(k+1)*step)))
		if len(recs) >= 5000 {
			flush()
		}
	}
	end := t0.Add(time.Hour)
	for k := 0; k < deletions; k++ {
		n, i := k%scaleNamespaces, (k/scaleNamespaces)*10
		s := streams[n]
		name, r := fmt.Sprintf("cm-%04d", i), next()
		uid := "uid-" + s.Namespace + "-" + name
		recs = append(recs, storagetest.Event(s, event.Deleted, storagetest.Ref(s, "ConfigMap", s.Namespace, name, uid, r),
			storagetest.ConfigMap(s.Namespace, name, uid, r, nil), end.Add(time.Duration(k)*time.Millisecond)))
	}
	recs = append(recs, storagetest.Gap(streams[2], t0.Add(20*time.Minute), t0.Add(25*time.Minute), "410 Gone: too old resource version", "0"),
		storagetest.Gap(streams[7], t0.Add(40*time.Minute), t0.Add(41*time.Minute), "watch failed: connection refused", "0"))
	flush()
	return j
}

// TestTimelineAtScale loads 10,000 objects and 100,000 changes into the
// timeline and measures how long that takes and how long the page's main
// thread is ever busy at once (the longest task: a page that freezes has a
// long one), then zooms, scrolls and filters and measures each redraw.
func TestTimelineAtScale(t *testing.T) {
	chromium(t)
	built := time.Now()
	j := scaleJournal(t)
	t.Logf("journal of %d changes written in %s", scaleChanges, time.Since(built).Round(time.Millisecond))
	base := serve(t, server.NewHandler(j, server.WithUI()))
	b := newBrowser(t, base)
	// Long tasks of the main thread from the page's first script on.
	if err := chromedp.Do(b.ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
			window.__longTasks = [];
			new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push(e.duration); }).observe({type: 'longtask', buffered: true});`})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b.open("/timeline")
	load := time.Since(start)
	var got struct {
		Objects, Changes int
		Timings          struct{ LoadMs, LayoutMs float64 }
		Paint            struct{ Ms float64 }
		LongTasks        []float64
	}
	measure := func() {
		b.eval(`(() => { const k = window.krplyTimeline; return {objects: k.objects, changes: k.changes, timings: k.timings, paint: k.paint, longTasks: window.__longTasks} })()`, &got)
	}
	measure()
	if got.Objects != scaleNamespaces*scalePerNS || got.Changes != scaleChanges {
		t.Fatalf("the timeline shows %d objects and %d changes, want %d and %d", got.Objects, got.Changes, scaleNamespaces*scalePerNS, scaleChanges)
	}
	longest := 0.0
	for _, d := range got.LongTasks {
		longest = max(longest, d)
	}
	t.Logf("loaded and drawn in %s (%.0f ms fetching %d pages, %.0f ms laying out, %.1f ms per frame); %d long tasks, the longest %.0f ms",
		load.Round(time.Millisecond), got.Timings.LoadMs, scaleChanges/1000, got.Timings.LayoutMs, got.Paint.Ms, len(got.LongTasks), longest)
	// Without freezing: no task holds the main thread for a second, and a
	// frame is drawn in well under one.
	if longest > 1000 {
		t.Errorf("the page was busy for %.0f ms at once while loading", longest)
	}
	frame := func(what string, act chromedp.Action[chromedp.Void], done string) {
		t.Helper()
		b.eval(`(() => { window.__longTasks = []; return true })()`, new(bool))
		b.do(what, act)
		b.wait(what+" done", done)
		b.wait(what+" drawn", `new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`)
		measure()
		slow := 0.0
		for _, d := range got.LongTasks {
			slow = max(slow, d)
		}
		t.Logf("%s: frame drawn in %.1f ms, longest task %.0f ms", what, got.Paint.Ms, slow)
		if got.Paint.Ms > 200 || slow > 500 {
			t.Errorf("%s: a frame took %.1f ms, the longest task %.0f ms", what, got.Paint.Ms, slow)
		}
	}
	b.do("focus", chromedp.Focus(chromedp.CSS(".tl-spacer canvas")))
	now := `true`
	frame("zoom in", chromedp.KeyEvent("+"), now)
	frame("pan", chromedp.KeyEvent(kb.ArrowRight), now)
	frame("scroll to the end", chromedp.Evaluate[chromedp.Void](`document.querySelector('.tl-scroll').scrollTop = 1e9`), now)
	frame("filter", chromedp.SendKeys(chromedp.CSS(".toolbar input[type=search]"), "ns-7 cm-099"),
		`window.krplyTimeline.owner.rows.filter(r => r.type === 'object').length === 10`)
	b.checkClean()
}
