package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Width and height of the browser window: the UI must be readable at 1280
// pixels wide.
const (
	width  = 1280
	height = 900
)

// chromium finds the browser as hack/chromium.sh does, without installing
// one: `make test` runs that script before the nested modules' tests. A
// missing browser fails the test under KRPLY_REQUIRE_TESTENV=1 (make test),
// naming the fix, and skips it otherwise, as the control plane tests do.
func chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("KRPLY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium for the browser tests: run hack/chromium.sh from the repository's root (it installs Debian's chromium package), or set KRPLY_CHROMIUM to a Chromium or Chrome binary"
	if os.Getenv("KRPLY_REQUIRE_TESTENV") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser is a headless Chromium tab on the UI served at base, which
// records every request the page makes and every error it reports.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	// loaded is set once the page is loaded: later views change its fragment.
	loaded bool

	mu       sync.Mutex
	requests []string
	errors   []string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.WindowSize(width, height),
		// Times are shown in the browser's zone: fixed, so that screenshots
		// and assertions do not depend on the machine.
		chromedp.Env("TZ=UTC"),
		chromedp.Flag("lang", "en-US"),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root without it
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &browser{t: t, base: base}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(func() { cancel(); acancel() })
	b.ctx = ctx
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

// listen runs in the tab's message loop: it only records.
func (b *browser) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, e.Request.URL)
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errors = append(b.errors, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.errors = append(b.errors, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			b.errors = append(b.errors, fmt.Sprintf("%s %s: %s (%s)", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL))
		}
	}
}

// checkClean fails the test on any request outside the server and on any
// error or warning the page logged (a Content-Security-Policy violation is
// one) but those containing an expected text, then forgets them.
func (b *browser) checkClean(expected ...string) {
	b.t.Helper()
	b.mu.Lock()
	reqs, errs := b.requests, b.errors
	b.requests, b.errors = nil, nil
	b.mu.Unlock()
	for _, u := range reqs {
		if !strings.HasPrefix(u, b.base+"/") && u != b.base && !strings.HasPrefix(u, "data:") {
			b.t.Errorf("the page loaded %s, outside the server %s", u, b.base)
		}
	}
next:
	for _, e := range errs {
		for _, x := range expected {
			if strings.Contains(e, x) {
				continue next
			}
		}
		b.t.Errorf("the page reported: %s", e)
	}
}

// requestCount says how many requests the page made so far.
func (b *browser) requestCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.requests)
}

// open shows a view: the page is loaded once, later views are reached by
// changing the URL's fragment, as a link does. It waits until the view has
// rendered and fails on a view that reports an error.
func (b *browser) open(hash string) {
	b.t.Helper()
	view := strings.SplitN(strings.TrimPrefix(hash, "/"), "?", 2)[0]
	var gen string
	if !b.loaded {
		if err := chromedp.Do(b.ctx, chromedp.Navigate(b.base+"/#"+hash)); err != nil {
			b.t.Fatalf("open %s: %v", hash, err)
		}
		b.loaded = true
	} else {
		// A new render has a new generation: wait for it, not the last one.
		b.eval(fmt.Sprintf(`(() => { const g = document.getElementById('view').dataset.gen; location.hash = %q; return g })()`, "#"+hash), &gen)
	}
	state, err := chromedp.Run(b.ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const v = document.getElementById('view');
		return v && v.dataset.view === %q && v.dataset.gen !== %q && (v.dataset.state === 'ready' || v.dataset.state === 'error') ? v.dataset.state : false })()`, view, gen),
		chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil {
		b.t.Fatalf("open %s: the view did not render: %v", hash, err)
	}
	if state != "ready" {
		b.t.Fatalf("open %s: the view shows an error: %s", hash, b.text("#view"))
	}
}

// eval evaluates a JavaScript expression into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		b.t.Fatalf("evaluate %s: decode %s: %v", expr, raw, err)
	}
}

// text is the rendered text of the first element matching a CSS selector
// ("" when none does).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : '' })()`, sel), &s)
	return s
}

// count is how many elements match a CSS selector.
func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	b.eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, sel), &n)
	return n
}

// do runs actions, failing the test on an error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// wait polls a JavaScript predicate until it is true.
func (b *browser) wait(what, predicate string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(30*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.t.Fatalf("%s: %v (view: %.600s)", what, err, b.text("#view"))
	}
}

// fitsWidth fails when the page is wider than the window: readable at 1280
// pixels means no horizontal scrolling of the page.
func (b *browser) fitsWidth(view string) {
	b.t.Helper()
	var w int
	b.eval(`document.documentElement.scrollWidth`, &w)
	if w > width {
		b.t.Errorf("%s: the page is %d pixels wide, wider than the %d-pixel window", view, w, width)
	}
}

// screenshot writes a PNG of the page to KRPLY_SCREENSHOTS/<name>.png, when
// that folder is set (make screenshots).
func (b *browser) screenshot(name string) {
	b.t.Helper()
	dir := os.Getenv("KRPLY_SCREENSHOTS")
	if dir == "" {
		return
	}
	// From the top, so that the sticky header is where it belongs.
	b.eval(`(() => { window.scrollTo(0, 0); return true })()`, new(bool))
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s (%d bytes)", path, len(png))
}

// finish ends a view's checks: the page fits the window, its screenshot is
// written (make screenshots), and it requested and logged nothing it should
// not have.
func (b *browser) finish(view string, expected ...string) {
	b.t.Helper()
	b.fitsWidth(view)
	b.screenshot(view)
	b.checkClean(expected...)
}

// serve starts the handler on a loopback port.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
