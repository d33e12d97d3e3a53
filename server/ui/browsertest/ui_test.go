package browsertest

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workload "github.com/krply/krply/krplytest/shop"
	"github.com/krply/krply/server"
)

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// TestUI opens each of the six views in headless Chromium against a journal
// recorded from the real control plane through an outage, clicks and types
// through them, and checks what they show. With KRPLY_SCREENSHOTS set it
// writes a PNG of each view there.
func TestUI(t *testing.T) {
	chromium(t) // before the control plane: a missing browser fails fast
	r := record(t)
	base := serve(t, server.NewHandler(r.j.Store(), server.WithUI(), server.WithRecorder(r.rec)))
	b := newBrowser(t, base)
	if d, err := time.ParseDuration(os.Getenv("KRPLY_UI_HOLD")); err == nil {
		// For a person to look at the UI on the recorded journal.
		t.Logf("the UI is served at %s/ for %s (KRPLY_UI_HOLD)", base, d)
		time.Sleep(d)
	}

	t.Run("overview", func(t *testing.T) {
		b.t = t
		b.open("/overview")
		row := `tr[data-stream="` + r.gapStream + `"]`
		if b.count(row) != 1 {
			t.Fatalf("no row for the stream %s: %s", r.gapStream, b.text("#view"))
		}
		// The gap is drawn: a hatched segment of the bar, spanning the outage.
		var gaps []struct{ From, To string }
		b.eval(`[...document.querySelectorAll('`+row+` rect[data-kind="gap"]')].map(e => ({from: e.dataset.from, to: e.dataset.to}))`, &gaps)
		if len(gaps) != 1 {
			t.Fatalf("the stream's bar has %d gap segments, want 1", len(gaps))
		}
		from, _ := time.Parse(time.RFC3339Nano, gaps[0].From)
		to, _ := time.Parse(time.RFC3339Nano, gaps[0].To)
		if !from.Before(r.inOutage) || !to.After(r.inOutage) {
			t.Errorf("the gap is drawn from %s to %s, which misses the outage at %s", gaps[0].From, gaps[0].To, rfc(r.inOutage))
		}
		var fill string
		b.eval(`getComputedStyle(document.querySelector('`+row+` rect[data-kind="gap"]')).fill`, &fill)
		if !strings.Contains(fill, "hatch-gap") {
			t.Errorf("the gap is filled with %q, not the hatch pattern", fill)
		}
		if n := b.count(row + ` .baseline-mark`); n < 2 {
			t.Errorf("%d baselines marked on the stream's bar, want the initial list and the relist", n)
		}
		if n := b.count(row + ` rect[data-kind="unobserved"]`); n != 1 {
			t.Errorf("%d 'not yet observed' segments, want 1 (after the stream's last evidence)", n)
		}
		if s := b.text(row); !strings.Contains(s, "watching") {
			t.Errorf("the stream's state is not 'watching': %q", s)
		}
		b.finish("overview")
	})

	t.Run("timeline", func(t *testing.T) {
		b.t = t
		b.open("/timeline?" + q("namespace", shop))
		var info struct {
			Objects, Changes int
			Cache, Web       int
		}
		b.eval(`(() => { const k = window.krplyTimeline; return {objects: k.objects, changes: k.changes, cache: k.rowIndex('ConfigMap', 'shop', 'cache'), web: k.rowIndex('Deployment', 'shop', 'web')} })()`, &info)
		if info.Objects < 6 || info.Cache < 0 || info.Web < 0 {
			t.Fatalf("timeline: %+v; want the shop's objects with cache and web", info)
		}
		// The gap is drawn on cache's row: hatched red pixels at the outage,
		// none at a time before it where nothing happened.
		red := func(at time.Time, row int) int {
			var n int
			// Read through a copy, made for reading (the page's canvas is not).
			b.eval(`(() => { const k = window.krplyTimeline, c = k.owner.canvas, d = window.devicePixelRatio || 1;
				const x = Math.round(k.xOf('`+rfc(at)+`') * d), y = Math.round(k.rowY(`+strconv.Itoa(row)+`) * d);
				const o = document.createElement('canvas'); o.width = 6 * d; o.height = 8 * d;
				const oc = o.getContext('2d', {willReadFrequently: true});
				oc.drawImage(c, x - 3 * d, y - 4 * d, 6 * d, 8 * d, 0, 0, 6 * d, 8 * d);
				const px = oc.getImageData(0, 0, 6 * d, 8 * d).data;
				let n = 0; for (let i = 0; i < px.length; i += 4) if (px[i] > 150 && px[i + 1] < 120 && px[i + 2] < 120) n++;
				return n })()`, &n)
			return n
		}
		// At the middle of the drawn gap: the moment the test took as "in
		// the outage" can lie a pixel or two after the gap's start (the
		// recorder's last evidence), too near its edge to sample.
		var mid string
		b.eval(`(() => { const g = window.krplyTimeline.gaps().find((g) => g.streamID === '`+r.gapStream+`'); return g ? new Date((Date.parse(g.from) + Date.parse(g.to)) / 2).toISOString() : '' })()`, &mid)
		inGap, err := time.Parse(time.RFC3339Nano, mid)
		if err != nil {
			t.Fatalf("no gap of %s in the timeline: %q", r.gapStream, mid)
		}
		if n := red(inGap, info.Cache); n == 0 {
			// Say where it looked, so that a failure tells a row drawn
			// off the canvas or a gap too narrow from a missing one.
			var where string
			b.eval(`(() => { const k = window.krplyTimeline, c = k.owner.canvas;
				return JSON.stringify({x: k.xOf('`+rfc(inGap)+`'), rowY: k.rowY(`+strconv.Itoa(info.Cache)+`), canvas: [c.width, c.height, window.devicePixelRatio || 1], gaps: k.gaps().map((g) => ({from: g.from, to: g.to, x0: k.xOf(g.from), x1: k.xOf(g.to), stream: g.streamID}))}) })()`, &where)
			t.Errorf("no hatched gap drawn on the row of ConfigMap cache (row %d) in the middle of its gap, %s: %s", info.Cache, rfc(inGap), where)
		}
		if n := red(r.setUp, info.Web); n != 0 {
			t.Errorf("%d red pixels on web's row before the outage, where no gap is", n)
		}
		if s := b.text(`.tl-gaps li[data-stream="` + r.gapStream + `"]`); !strings.Contains(s, "core/v1/configmaps/shop") || !strings.Contains(s, "410") {
			t.Errorf("the list of gaps does not name %s and its 410: %q", r.gapStream, b.text(".tl-gaps"))
		}
		// Keyboard: focus the timeline, choose cache's row, see its changes.
		b.do("focus the timeline", chromedp.Focus(chromedp.CSS(".tl-spacer canvas")))
		for i := 0; i <= info.Cache; i++ {
			b.do("arrow down", chromedp.KeyEvent(kb.ArrowDown))
		}
		b.wait("cache's changes listed", `document.querySelector('.tl-details h2') && document.querySelector('.tl-details h2').innerText.includes('cache')`)
		if s := b.text(".tl-details"); !strings.Contains(s, "inferred deletion") || !strings.Contains(s, "deleted at the end (inferred by a relist") {
			t.Errorf("cache's changes do not show its inferred deletion: %q", s)
		}
		b.wait("the selection in the URL", `location.hash.includes('sel=')`)
		b.fitsWidth("timeline")
		b.screenshot("timeline")
		// The filter box narrows the rows, and the URL keeps it.
		b.do("filter", chromedp.SendKeys(chromedp.CSS(".toolbar input[type=search]"), "cache"))
		b.wait("filtered", `window.krplyTimeline.rowIndex('Deployment', 'shop', 'web') === -1 && window.krplyTimeline.rowIndex('ConfigMap', 'shop', 'cache') >= 0`)
		b.wait("the filter in the URL", `location.hash.includes('filter=cache')`)
		// Following the change feed: a ConfigMap created now appears.
		b.open("/timeline?" + q("namespace", shop, "live", "1"))
		b.wait("following", `document.querySelector('.live').innerText.includes('following new records')`)
		if _, err := r.admin.Resource(configMapsGVR).Namespace(shop).Create(context.Background(), workload.ConfigMap("fresh", map[string]any{"new": "yes"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.wait("the new ConfigMap on the timeline", `window.krplyTimeline.rowIndex('ConfigMap', 'shop', 'fresh') >= 0`)
		b.open("/timeline?" + q("namespace", shop, "filter", "cache", "sel", "ConfigMap/shop/cache"))
		// Enter opens the chosen object.
		b.do("focus the timeline", chromedp.Focus(chromedp.CSS(".tl-spacer canvas")))
		b.do("open", chromedp.KeyEvent(kb.Enter))
		b.wait("the object view", `location.hash.startsWith('#/object') && location.hash.includes('name=cache')`)
		b.checkClean()
	})

	t.Run("condition", func(t *testing.T) { testTimelineCondition(t, r) })

	t.Run("object", func(t *testing.T) {
		b.t = t
		obj := q("cluster", r.clusterID, "group", "apps", "resource", "deployments", "namespace", shop, "name", "web")
		b.open("/object?" + obj)
		// Who: the users of the audit log, exact, on real watch events only.
		var who []struct{ Origin, Who string }
		b.eval(`[...document.querySelectorAll('tr.version')].map(tr => ({origin: tr.dataset.origin, who: tr.querySelector('.who').innerText}))`, &who)
		if len(who) < 4 {
			var page string
			b.eval(`location.hash + '\n' + document.getElementById('view').innerText`, &page)
			t.Fatalf("%d versions of web, want its creation, two changes and the relist's: %+v\n%s", len(who), who, page)
		}
		for i, want := range []string{"alice", "alice", "bob"} {
			if who[i].Origin != "watch" || !strings.HasPrefix(who[i].Who, want) || !strings.Contains(who[i].Who, "audit: exact") {
				t.Errorf("version %d: %+v, want a watch event by %s, exact", i+1, who[i], want)
			}
		}
		var relist bool
		for _, w := range who {
			if w.Origin == "baseline" {
				relist = true
				// Bob's patch in the outage is known only through the relist:
				// the audit names him, never exactly.
				if strings.Contains(w.Who, "exact") || !strings.Contains(w.Who, "seen through the relist") {
					t.Errorf("the relist's version claims an exact author: %q", w.Who)
				}
			}
		}
		if !relist {
			t.Error("no version seen by the relist after the outage (bob's scale to 2)")
		}
		if n := b.count("tr.entry-gap"); n != 1 {
			t.Errorf("%d gaps in web's history, want 1", n)
		}
		if s := b.text(".events"); !strings.Contains(s, "ScalingReplicaSet") || !strings.Contains(s, "Scaled down replica set web-6d4b to 2") {
			t.Errorf("the Events about web are not shown: %q", s)
		}
		// The YAML of the first version.
		b.do("YAML", chromedp.Click(chromedp.CSS(`tr.version a[aria-label="YAML of version 1"]`)))
		b.wait("the YAML", `!!document.querySelector('pre.yaml') && document.querySelector('pre.yaml').innerText.includes('image: nginx:1.27')`)
		// Side by side: the first version against the one with the new image.
		var second string
		b.eval(`document.querySelectorAll('tr.version')[1].dataset.index`, &second)
		b.open("/object?" + obj + "&a=0&b=" + second)
		var change struct{ Old, New []string }
		b.eval(`({old: [...document.querySelectorAll('table.sbs td.old')].map(e => e.innerText), new: [...document.querySelectorAll('table.sbs td.new')].map(e => e.innerText)})`, &change)
		if !strings.Contains(strings.Join(change.Old, "\n"), "image: nginx:1.27") || !strings.Contains(strings.Join(change.New, "\n"), "image: nginx:1.28") {
			t.Errorf("the side-by-side diff does not show the image change: %+v", change)
		}
		if strings.Contains(b.text("table.sbs"), "managedFields") {
			t.Error("the diff shows managedFields, which it hides unless asked")
		}
		b.fitsWidth("object")
		b.screenshot("object")

		// settings, unchanged through the outage: the relist after it is a
		// confirmation of bob's version, not a version of its own.
		b.open("/object?" + q("cluster", r.clusterID, "resource", "configmaps", "namespace", shop, "name", "settings"))
		if n, s := b.count("tr.entry-confirmed"), b.text("tr.entry-confirmed"); n != 1 || !strings.Contains(s, "Confirmed by relist") || !strings.Contains(s, "as version 2 left it") {
			t.Errorf("%d confirmations in settings' history (%q), want the relist's, of version 2", n, s)
		}
		if n := b.count(`tr.version[data-origin="baseline"]`); n != 0 {
			t.Errorf("%d versions of settings seen by a relist, want none: it did not change in the outage", n)
		}

		// The deleted objects are gone at "now": cache's deletion inferred by
		// the relist, legacy's a watch DELETED event.
		b.open("/object?" + q("cluster", r.clusterID, "resource", "configmaps", "namespace", shop, "name", "cache"))
		if s := b.text(".state-box"); !strings.Contains(s, "gone") || !strings.Contains(s, "inferred by a relist") || !strings.Contains(s, "no watch DELETED event") {
			t.Errorf("cache at now: %q, want gone, its deletion inferred by a relist", s)
		}
		if s := b.text(`tr.version[data-origin="inferred"]`); !strings.Contains(s, "inferred by a relist") {
			t.Errorf("cache's inferred deletion in its history: %q, want it said inferred by a relist", s)
		}
		if n := b.count(`tr.version[data-origin="inferred"]`); n != 1 {
			t.Errorf("%d inferred deletions in cache's history, want 1", n)
		}
		b.open("/object?" + q("cluster", r.clusterID, "resource", "configmaps", "namespace", shop, "name", "legacy"))
		if s := b.text(".state-box"); !strings.Contains(s, "gone") || !strings.Contains(s, "a watch DELETED event") || strings.Contains(s, "inferred") {
			t.Errorf("legacy at now: %q, want gone by a watch DELETED event", s)
		}
		b.checkClean()
	})

	t.Run("namespace", func(t *testing.T) {
		b.t = t
		// During the outage: incomplete, naming the streams and why.
		b.open("/namespace?" + q("namespace", shop, "at", rfc(r.inOutage)))
		if s := b.text(".banner"); !strings.Contains(s, "Incomplete") {
			t.Errorf("the outage's banner does not say incomplete: %q", s)
		}
		if n := b.count(`.banner li[data-stream="` + r.gapStream + `"]`); n != 1 {
			t.Errorf("the incomplete banner does not name %s: %q", r.gapStream, b.text(".banner"))
		}
		if s := b.text(`.banner li[data-stream="` + r.gapStream + `"]`); !strings.Contains(s, "gap") {
			t.Errorf("the banner does not say why %s is missing: %q", r.gapStream, s)
		}
		if b.count(`tr[data-name="settings"][data-uncertain="true"]`) != 1 {
			t.Errorf("settings, whose stream has a gap at the outage, is not marked uncertain: %q", b.text("table.objects"))
		}
		b.screenshot("namespace-outage")
		// At the end, complete: cache and legacy are gone, the rest alive.
		b.open("/namespace?" + q("namespace", shop, "at", rfc(r.end)))
		if s := b.text(".banner"); !strings.Contains(s, "Complete") {
			t.Errorf("the banner at the end does not say complete: %q", s)
		}
		for _, name := range []string{"settings", "web", "deployer"} {
			if b.count(`tr[data-name="`+name+`"]`) == 0 {
				t.Errorf("%s is not alive at the end: %q", name, b.text("#view"))
			}
		}
		if n := b.count(`tr[data-uncertain="true"]`); n != 0 {
			t.Errorf("%d objects marked uncertain in a complete picture", n)
		}
		for _, name := range []string{"cache", "legacy"} {
			if b.count(`tr[data-kind="ConfigMap"][data-name="`+name+`"]`) != 0 {
				t.Errorf("the deleted ConfigMap %s is alive at the end", name)
			}
		}
		// A server of pages of 2 objects: the view reads every page.
		rows := b.count(`table.objects tbody tr`)
		if rows < 3 {
			t.Fatalf("%d objects at the end, want at least 3 to page", rows)
		}
		pb := newBrowser(t, serve(t, server.NewHandler(r.j.Store(), server.WithUI(), server.WithMaxPageSize(2))))
		pb.open("/namespace?" + q("namespace", shop, "at", rfc(r.end)))
		if n := pb.count(`table.objects tbody tr`); n != rows {
			t.Errorf("%d objects from a server of pages of 2, want the %d of one page: %q", n, rows, pb.text("table.objects"))
		}
		if s := pb.text(".banner"); !strings.Contains(s, "Complete") {
			t.Errorf("the banner of pages does not say complete: %q", s)
		}
		pb.checkClean()
		b.fitsWidth("namespace")
		b.screenshot("namespace")
		// Typed into the time picker: "now".
		b.eval(`(() => { document.getElementById('at-input').value = ''; return true })()`, new(bool))
		b.do("type now", chromedp.SendKeys(chromedp.CSS("#at-input"), "now"+kb.Enter))
		b.wait("now in the URL", `location.hash.includes('at=now') && document.getElementById('view').dataset.state === 'ready'`)
		if b.count(`tr[data-kind="ConfigMap"][data-name="cache"]`) != 0 {
			t.Error("the deleted ConfigMap cache is alive now")
		}
		b.checkClean()
	})

	t.Run("diff", func(t *testing.T) {
		b.t = t
		b.open("/diff?" + q("namespace", shop, "from", rfc(r.setUp), "to", rfc(r.end)))
		want := map[string]string{"cache": "removed", "legacy": "removed", "settings": "changed", "web": "changed"}
		for name, typ := range want {
			if b.count(`tr[data-name="`+name+`"][data-type="`+typ+`"]`) != 1 {
				t.Errorf("%s is not %s in the diff: %q", name, typ, b.text("table.diff"))
			}
		}
		if s := b.text(".banner"); !strings.Contains(s, "Gaps intersect") || !strings.Contains(s, "configmaps") {
			t.Errorf("the diff over the outage does not warn of its gaps: %q", s)
		}
		// A server of pages of 1 object: the view reads every page.
		pb := newBrowser(t, serve(t, server.NewHandler(r.j.Store(), server.WithUI(), server.WithMaxPageSize(1))))
		pb.open("/diff?" + q("namespace", shop, "from", rfc(r.setUp), "to", rfc(r.end)))
		if n, want := pb.count(`table.diff tbody tr`), b.count(`table.diff tbody tr`); n != want || n < 4 {
			t.Errorf("%d objects in the diff from a server of pages of 1, want the %d of one page", n, want)
		}
		pb.checkClean()
		b.finish("diff")
		// g then a digit switches views from the keyboard.
		b.eval(`(() => { document.activeElement && document.activeElement.blur(); return true })()`, new(bool))
		b.do("g 1", chromedp.KeyEvent("g"), chromedp.KeyEvent("1"))
		b.wait("the overview by keyboard", `location.hash.startsWith('#/overview') && document.getElementById('view').dataset.state === 'ready'`)
	})

	t.Run("plan", func(t *testing.T) {
		b.t = t
		b.open("/plan")
		if s := b.text("#view"); !strings.Contains(s, r.plan.ID) {
			t.Fatalf("the saved plan %s is not listed: %q", r.plan.ID, s)
		}
		b.open("/plan?" + q("id", r.plan.ID))
		row := `tr[data-kind="ConfigMap"][data-name="settings"]`
		if s := b.text(row); !strings.Contains(s, "conflict") || b.text(row+" code.manager") != "helm" {
			t.Errorf("the dry run's conflict does not name the manager helm: %q", s)
		}
		if b.count(`tr[data-kind="ServiceAccount"][data-rule="service-accounts"]`) != 1 {
			t.Errorf("the ServiceAccount is not listed as excluded: %q", b.text(".exclusions"))
		}
		var order []string
		b.eval(`[...document.querySelectorAll('.plan-objects tbody tr')].map(tr => tr.dataset.kind)`, &order)
		if len(order) == 0 || order[0] != "Namespace" {
			t.Errorf("objects in the order %q, want the Namespace first", order)
		}
		if b.count("form.apply") != 0 || b.count("#confirm-hash") != 0 {
			t.Error("an apply form on a server that does not allow apply")
		}
		b.finish("plan")

		// A server that allows apply: the button waits for the plan's hash, typed.
		applyBase := serve(t, server.NewHandler(r.j.Store(), server.WithUI(), server.WithApply(r.target)))
		ab := newBrowser(t, applyBase)
		ab.open("/plan?" + q("id", r.plan.ID))
		if ab.count("#confirm-hash") != 1 {
			t.Fatal("no confirmation field on a server that allows apply")
		}
		disabled := func() bool {
			var d bool
			ab.eval(`document.querySelector('form.apply button').disabled`, &d)
			return d
		}
		if !disabled() {
			t.Error("apply is enabled before the hash is typed")
		}
		ab.do("type a wrong hash", chromedp.SendKeys(chromedp.CSS("#confirm-hash"), "sha256:0000"))
		if !disabled() {
			t.Error("apply is enabled with a wrong hash")
		}
		ab.eval(`(() => { document.getElementById('confirm-hash').value = ''; return true })()`, new(bool))
		ab.do("type the hash", chromedp.SendKeys(chromedp.CSS("#confirm-hash"), r.plan.Hash))
		if disabled() {
			t.Error("apply stays disabled with the plan's hash typed")
		}
		// Its dry run conflicted, so the server refuses to apply, and the page says so.
		ab.do("apply", chromedp.Click(chromedp.CSS("form.apply button")))
		ab.wait("the refusal", `document.querySelector('form.apply [role=status]').innerText.length > 0 && !document.querySelector('form.apply [role=status]').innerText.startsWith('Applying')`)
		if s := ab.text("form.apply [role=status]"); !strings.Contains(strings.ToLower(s), "dry run") {
			t.Errorf("the refused apply says %q, want the reason (no clean dry run)", s)
		}
		ab.screenshot("plan-apply")
		ab.checkClean("409 (Conflict)") // the refused apply, which the page showed
	})
}
