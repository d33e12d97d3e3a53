package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/krply/krply/cel"
	workload "github.com/krply/krply/krplytest/shop"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
)

// testTimelineCondition is TestUI's "condition" subtest: the timeline's
// condition box on the recorded journal. settings' color is green from
// bob's update until alice's red one, across the outage: find answers two
// intervals, one whose end is unknown at the gap and one whose start is
// unknown at the relist. The test types the condition and checks, on the
// canvas's pixels at the times of those intervals, that the bars are drawn
// where find says, hatched at the unknown ends and solid at the known ones;
// that the other rows are dimmed; that a link reproduces it; that a bad
// expression shows the server's error; that Clear clears it.
func testTimelineCondition(t *testing.T, r *recording) {
	base := serve(t, server.NewHandler(r.j.Store(), server.WithUI(), server.WithConditions(cel.Conditions())))
	b := newBrowser(t, base)
	const green = `object.data.color == "green"`

	// What find answers, through the API: the drawing must show it.
	var found materialize.Found
	if status, body := getFind(t, base, green); status != http.StatusOK || json.Unmarshal(body, &found) != nil {
		t.Fatalf("find %s: %d %s", green, status, body)
	}
	var settings []materialize.Interval
	for _, o := range found.Objects {
		if o.Object.Name != "settings" {
			t.Errorf("find matched %s/%s, which was never green", o.Object.Resource, o.Object.Name)
			continue
		}
		settings = append(settings, o.Intervals...)
	}
	if len(settings) != 2 {
		t.Fatalf("find gives settings %d intervals, want 2 (before and after the outage): %+v", len(settings), found)
	}
	before, after := settings[0], settings[1]
	if !before.From.After(r.setUp) || !before.To.Before(r.inOutage) || before.StartUnknown != "" || before.EndUnknown == "" {
		t.Fatalf("the interval before the outage: %+v; want bob's update after %s, its end unknown before %s", before, rfc(r.setUp), rfc(r.inOutage))
	}
	if !after.From.After(r.inOutage) || after.To.IsZero() || !after.To.Before(r.end) || after.StartUnknown == "" || after.EndUnknown != "" {
		t.Fatalf("the interval after the outage: %+v; want its start unknown after %s, alice's red update before %s", after, rfc(r.inOutage), rfc(r.end))
	}
	if !strings.Contains(before.EndUnknown, "gap") || !strings.Contains(after.StartUnknown, "gap") {
		t.Errorf("the unknown ends do not name the gap: %q, %q", before.EndUnknown, after.StartUnknown)
	}

	// A window around the first interval, so that it spans half the canvas.
	pad := before.To.Sub(before.From) / 2
	b.open("/timeline?" + q("namespace", shop, "from", rfc(before.From.Add(-pad)), "to", rfc(before.To.Add(pad))))
	b.do("type the condition", chromedp.SendKeys(chromedp.CSS("#cond-input"), green+kb.Enter))
	b.waitCondition("ready")
	b.wait("the condition in the URL", `location.hash.includes('cond=')`)
	var cond string
	b.eval(`new URLSearchParams(location.hash.split('?')[1]).get('cond')`, &cond)
	if cond != green {
		t.Errorf("the URL keeps the condition %q, want %q", cond, green)
	}
	summary := b.text(".cond-summary")
	for _, want := range []string{"1 object matched", "2 intervals", "2 with an end unknown", fmt.Sprintf("%d versions evaluated", found.Evaluated), "other rows are dimmed"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary %q does not say %q", summary, want)
		}
	}
	for _, w := range found.Warnings {
		if !strings.Contains(b.text(".cond-warnings"), w) {
			t.Errorf("the warning %q of find's answer is not shown: %q", w, b.text(".cond-status"))
		}
	}

	// settings is kept, drawn dark; the others dimmed, drawn pale.
	settingsRow := b.row("ConfigMap", "settings")
	for name, row := range map[string]int{"settings": settingsRow, "cache": b.row("ConfigMap", "cache"), "web": b.row("Deployment", "web")} {
		var dimmed bool
		b.eval(fmt.Sprintf(`window.krplyTimeline.dimmed(%d)`, row), &dimmed)
		darkest := b.labelDarkness(row)
		if name == "settings" && (dimmed || darkest > 100) {
			t.Errorf("settings, which matched, is dimmed (%v) or drawn pale (darkest label pixel %d)", dimmed, darkest)
		}
		if name != "settings" && (!dimmed || darkest < 170) {
			t.Errorf("%s, which never matched, is not dimmed (%v) or drawn dark (darkest label pixel %d)", name, dimmed, darkest)
		}
	}

	// The bar: over the interval, solid at bob's update (known), hatched
	// at the gap (unknown), nothing before it nor in the gap.
	b.frame()
	b.screenshot("timeline-condition")
	px := func(at time.Time, dx float64) pixels { return b.pixels(at, dx, settingsRow) }
	if p := px(before.From.Add(before.To.Sub(before.From)/2), 0); p.Teal == 0 || p.Dark != 0 {
		t.Errorf("the middle of the interval, %s: %+v; want the bar, solid", rfc(before.From.Add(before.To.Sub(before.From)/2)), p)
	}
	if p := px(before.From, 10); p.Teal == 0 || p.Dark != 0 {
		t.Errorf("just after bob's update, which made it true: %+v; want the bar, solid (its start is known)", p)
	}
	if p := px(before.To, -5); p.Dark == 0 {
		t.Errorf("just before the gap: %+v; want the bar's end hatched (unknown)", p)
	}
	if p := px(before.From, -12); p.Teal != 0 {
		t.Errorf("before bob's update: %+v; want no bar", p)
	}
	if p := px(before.To, 8); p.Teal != 0 || p.Red == 0 {
		t.Errorf("in the gap: %+v; want the gap's hatch, no bar", p)
	}
	// The hatched end says why, on hover; choosing the row lists the
	// intervals, each unknown end's reason in its title.
	x, y := b.viewportXY(before.To, -4, settingsRow)
	b.do("hover the hatched end", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
	b.wait("the tooltip", `!document.querySelector('.tl-tip').hidden`)
	if s := b.text(".tl-tip"); !strings.Contains(s, "Condition true") || !strings.Contains(s, "end unknown: "+before.EndUnknown) {
		t.Errorf("the tooltip of the hatched end says %q, want the reason %q", s, before.EndUnknown)
	}
	x, y = b.viewportXY(before.From.Add(before.To.Sub(before.From)/2), 0, settingsRow)
	b.do("choose settings on its bar", chromedp.MouseClickXY(x, y))
	b.wait("settings' intervals listed", `!!document.querySelector('.tl-details .cond-intervals .unknown-end')`)
	var titles []string
	b.eval(`[...document.querySelectorAll('.tl-details .unknown-end')].map((e) => e.title)`, &titles)
	if len(titles) != 2 || titles[0] != before.EndUnknown || titles[1] != after.StartUnknown {
		t.Errorf("the unknown ends listed have the titles %q, want %q and %q", titles, before.EndUnknown, after.StartUnknown)
	}

	// A link reproduces it: the second interval, hatched at the relist
	// (unknown start), solid up to alice's red update (known end).
	pad = after.To.Sub(after.From) / 2
	b.open("/timeline?" + q("namespace", shop, "cond", green, "from", rfc(after.From.Add(-pad)), "to", rfc(after.To.Add(pad))))
	b.waitCondition("ready")
	if v := b.inputValue(); v != green {
		t.Errorf("the linked condition shows %q in its box, want %q", v, green)
	}
	b.frame()
	if p := px(after.From, 9); p.Dark == 0 {
		t.Errorf("just after the relist: %+v; want the bar's start hatched (unknown)", p)
	}
	if p := px(after.From.Add(after.To.Sub(after.From)/2), 0); p.Teal == 0 || p.Dark != 0 {
		t.Errorf("the middle of the second interval: %+v; want the bar, solid", p)
	}
	if p := px(after.To, -10); p.Teal == 0 || p.Dark != 0 {
		t.Errorf("just before alice's red update: %+v; want the bar, solid (its end is known)", p)
	}
	if p := px(after.To, 10); p.Teal != 0 {
		t.Errorf("after alice's red update: %+v; want no bar", p)
	}

	// An open interval runs to the row's end: red since alice's update.
	b.setCondition(`object.data.color == "red"`)
	b.waitCondition("ready")
	b.frame()
	var right float64
	b.eval(`window.krplyTimeline.owner.width() - 8`, &right)
	if p := b.pixelsAt(right-6, settingsRow); p.Teal == 0 || p.Dark != 0 {
		t.Errorf("at the row's end: %+v; want the open interval's bar", p)
	}

	// Following new records, the condition is asked again: a ConfigMap
	// made purple now is found, its row no longer dimmed.
	const purple = `object.data.color == "purple"`
	b.open("/timeline?" + q("namespace", shop, "live", "1", "cond", purple))
	b.waitCondition("ready")
	b.wait("following", `document.querySelector('.live').innerText.includes('following new records')`)
	if s := b.text(".cond-summary"); !strings.HasPrefix(s, "0 objects matched") {
		t.Errorf("before any ConfigMap is purple, the summary says %q", s)
	}
	if _, err := r.admin.Resource(configMapsGVR).Namespace(shop).Create(context.Background(), workload.ConfigMap("tint", map[string]any{"color": "purple"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.wait("the purple ConfigMap found while following", `document.querySelector('.cond-summary') && document.querySelector('.cond-summary').innerText.startsWith('1 object matched')`)
	var tintDimmed bool
	b.eval(fmt.Sprintf(`window.krplyTimeline.dimmed(%d)`, b.row("ConfigMap", "tint")), &tintDimmed)
	var answers string
	b.eval(`document.querySelector('form.cond').dataset.answers`, &answers)
	if tintDimmed || answers == "1" {
		t.Errorf("after the purple ConfigMap: its row dimmed %v, %s answers of find (want more than the first)", tintDimmed, answers)
	}

	// A bad expression: the server's compile error, in words, by the box.
	const bad = `object.data.color ==`
	status, body := getFind(t, base, bad)
	var apiErr struct{ Message string }
	if status != http.StatusBadRequest || json.Unmarshal(body, &apiErr) != nil || !strings.Contains(apiErr.Message, "column") {
		t.Fatalf("find %s: %d %s; want 400 naming the column", bad, status, body)
	}
	b.setCondition(bad)
	b.waitCondition("error")
	if s := b.text(".cond-error"); !strings.Contains(s, "does not compile") || !strings.Contains(s, apiErr.Message) {
		t.Errorf("the error shown is %q, want the server's %q", s, apiErr.Message)
	}

	// Clear: no condition, nothing dimmed, nothing in the URL.
	b.do("clear", chromedp.Click(chromedp.CSS(`form.cond button[type=button]`)))
	b.waitCondition("off")
	b.wait("no condition in the URL", `!location.hash.includes('cond=')`)
	var dimmed bool
	b.eval(fmt.Sprintf(`window.krplyTimeline.dimmed(%d)`, b.row("Deployment", "web")), &dimmed)
	if dimmed || b.count(".cond-error") != 0 {
		t.Errorf("after Clear: web dimmed %v, %d errors shown", dimmed, b.count(".cond-error"))
	}
	b.checkClean("400 (Bad Request)") // the bad expression's answer, which the page showed
}

// getFind asks the query API's find route.
func getFind(t *testing.T, base, expr string) (int, []byte) {
	t.Helper()
	res, err := http.Get(base + "/api/v1/find?" + q("namespace", shop, "expr", expr))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// pixels counts the timeline's pixels of a kind in a small box: Teal a
// condition's bar, Dark the stripes of its hatch, Red a gap's hatch.
type pixels struct{ Teal, Dark, Red int }

// pixels samples the timeline at a time, shifted by dx CSS pixels, on a row.
func (b *browser) pixels(at time.Time, dx float64, row int) pixels {
	b.t.Helper()
	var x float64
	b.eval(`window.krplyTimeline.xOf('`+rfc(at)+`')`, &x)
	return b.pixelsAt(x+dx, row)
}

// pixelsAt samples a 6×8 box of the timeline's canvas centred at x (CSS
// pixels) on a row, through a copy made for reading.
func (b *browser) pixelsAt(x float64, row int) pixels {
	b.t.Helper()
	var p pixels
	b.eval(fmt.Sprintf(`(() => { const k = window.krplyTimeline, c = k.owner.canvas, d = window.devicePixelRatio || 1;
		const x = Math.round(%f * d), y = Math.round(k.rowY(%d) * d);
		const o = document.createElement('canvas'); o.width = 6 * d; o.height = 8 * d;
		const oc = o.getContext('2d', {willReadFrequently: true});
		oc.drawImage(c, x - 3 * d, y - 4 * d, 6 * d, 8 * d, 0, 0, 6 * d, 8 * d);
		const px = oc.getImageData(0, 0, 6 * d, 8 * d).data;
		let teal = 0, dark = 0, red = 0;
		for (let i = 0; i < px.length; i += 4) {
			// As the page shows it: over the white behind the canvas.
			const a = px[i + 3] / 255, over = (v) => v * a + 255 * (1 - a);
			const r = over(px[i]), g = over(px[i + 1]), bl = over(px[i + 2]);
			if (r < 60 && g > 100 && g > bl && bl > 80) dark++;
			else if (g - r > 20 && bl - r > 20) teal++;
			if (r > 150 && g < 120 && bl < 120) red++;
		}
		return {teal, dark, red} })()`, x, row), &p)
	return p
}

// labelDarkness is the darkest grey (0-255) of a row's label on the canvas.
func (b *browser) labelDarkness(row int) int {
	b.t.Helper()
	var n int
	b.eval(fmt.Sprintf(`(() => { const k = window.krplyTimeline, c = k.owner.canvas, d = window.devicePixelRatio || 1;
		const y = Math.round((k.rowY(%d) - 7) * d), w = 250 * d, h = 14 * d;
		const o = document.createElement('canvas'); o.width = w; o.height = h;
		const oc = o.getContext('2d', {willReadFrequently: true});
		oc.drawImage(c, 0, y, w, h, 0, 0, w, h);
		const px = oc.getImageData(0, 0, w, h).data;
		let min = 255;
		for (let i = 0; i < px.length; i += 4) {
			const a = px[i + 3] / 255; // over the white behind the canvas
			min = Math.min(min, Math.round(((px[i] + px[i + 1] + px[i + 2]) / 3) * a + 255 * (1 - a)));
		}
		return min })()`, row), &n)
	return n
}

// viewportXY is where a time, shifted by dx, on a row of the timeline is in
// the window, for the mouse.
func (b *browser) viewportXY(at time.Time, dx float64, row int) (float64, float64) {
	b.t.Helper()
	var p struct{ X, Y float64 }
	b.eval(fmt.Sprintf(`(() => { const k = window.krplyTimeline, r = k.owner.canvas.getBoundingClientRect();
		return {x: r.left + k.xOf('%s') + %f, y: r.top + k.rowY(%d)} })()`, rfc(at), dx, row), &p)
	if p.X < 0 || p.X > width || p.Y < 0 || p.Y > height {
		b.t.Fatalf("%s on row %d is at (%.0f, %.0f), outside the window", rfc(at), row, p.X, p.Y)
	}
	return p.X, p.Y
}

// row is the timeline's row of an object of the shop, which must be there.
func (b *browser) row(kind, name string) int {
	b.t.Helper()
	var i int
	b.eval(fmt.Sprintf(`window.krplyTimeline.rowIndex(%q, %q, %q)`, kind, shop, name), &i)
	if i < 0 {
		b.t.Fatalf("no row for %s %s on the timeline", kind, name)
	}
	return i
}

// setCondition replaces the condition box's text and presses Enter.
func (b *browser) setCondition(expr string) {
	b.t.Helper()
	b.eval(`(() => { document.getElementById('cond-input').value = ''; return true })()`, new(bool))
	b.do("type "+expr, chromedp.SendKeys(chromedp.CSS("#cond-input"), expr+kb.Enter))
}

func (b *browser) inputValue() string {
	b.t.Helper()
	var v string
	b.eval(`document.getElementById('cond-input').value`, &v)
	return v
}

// waitCondition waits for the condition's answer (ready), its error or its
// clearing (off).
func (b *browser) waitCondition(state string) {
	b.t.Helper()
	b.wait("the condition "+state, fmt.Sprintf(`document.querySelector('form.cond') && document.querySelector('form.cond').dataset.state === %q`, state))
}

// frame waits for two animation frames: what the timeline was asked to
// draw is on its canvas.
func (b *browser) frame() {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		b.t.Fatalf("wait for a frame: %v", err)
	}
}
