package browsertest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/krply/krply/event"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

// TestTokenAndFollow: on a server that wants a bearer token the UI asks
// for one, sends it with every call, and follows the change feed with it:
// a record appended to the journal while the timeline follows appears on
// it.
func TestTokenAndFollow(t *testing.T) {
	chromium(t)
	ctx := context.Background()
	j := memory.New()
	t.Cleanup(func() { _ = j.Close() })
	s := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "demo"}
	t0 := time.Now().Add(-10 * time.Minute)
	cm := func(name, rv string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(s, "ConfigMap", "demo", name, "uid-"+name, rv),
			Object: storagetest.ConfigMap("demo", name, "uid-"+name, rv, map[string]string{"v": rv})}
	}
	if _, err := j.Append(ctx, storagetest.Baseline(s, "b1", t0, "3", []storagetest.Item{cm("a", "1"), cm("b", "2")})); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# the UI's test\nopen-sesame\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := serve(t, server.NewHandler(j, server.WithUI(), server.WithTokenFile(tokens)))
	b := newBrowser(t, base)

	b.do("open", chromedp.Navigate(base+"/#/timeline?namespace=demo&live=1"))
	b.wait("the token form", `!!document.getElementById('token')`)
	b.do("type a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "guess"+kb.Enter))
	b.wait("the token refused", `!!document.getElementById('token') && document.getElementById('view').innerText.includes('refused this token')`)
	b.eval(`(() => { document.getElementById('token').value = ''; return true })()`, new(bool))
	b.do("type the token", chromedp.SendKeys(chromedp.CSS("#token"), "open-sesame"+kb.Enter))
	b.wait("the timeline", `document.getElementById('view').dataset.view === 'timeline' && document.getElementById('view').dataset.state === 'ready'`)
	var objects int
	b.eval(`window.krplyTimeline.objects`, &objects)
	if objects != 2 {
		t.Fatalf("the timeline shows %d objects, want 2", objects)
	}
	b.wait("following", `document.querySelector('.live').innerText.includes('following new records')`)
	ref := storagetest.Ref(s, "ConfigMap", "demo", "c", "uid-c", "4")
	if _, err := j.Append(ctx, []event.Record{storagetest.Event(s, event.Added, ref, storagetest.ConfigMap("demo", "c", "uid-c", "4", nil), time.Now())}); err != nil {
		t.Fatal(err)
	}
	b.wait("the new ConfigMap on the timeline", `window.krplyTimeline.rowIndex('ConfigMap', 'demo', 'c') >= 0`)
	// The refused calls before the token was given are all the page logged.
	b.checkClean("401 (Unauthorized)")
}

// TestUnderPrefix: a platform tool mounts the handler under a prefix of its
// own; the UI's pages, scripts and API calls are relative, so they follow.
func TestUnderPrefix(t *testing.T) {
	chromium(t)
	j := memory.New()
	t.Cleanup(func() { _ = j.Close() })
	s := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "demo"}
	item := storagetest.Item{Ref: storagetest.Ref(s, "ConfigMap", "demo", "a", "uid-a", "1"), Object: storagetest.ConfigMap("demo", "a", "uid-a", "1", nil)}
	if _, err := j.Append(context.Background(), storagetest.Baseline(s, "b1", time.Now().Add(-time.Minute), "2", []storagetest.Item{item})); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/tools/krply/", http.StripPrefix("/tools/krply", server.NewHandler(j, server.WithUI())))
	b := newBrowser(t, serve(t, mux)+"/tools/krply")
	b.open("/overview")
	if n := b.count(`tr[data-stream="c1/core/v1/configmaps/demo"]`); n != 1 {
		t.Errorf("the overview under a prefix shows %d rows of the stream: %q", n, b.text("#view"))
	}
	b.open("/object?cluster=c1&resource=configmaps&namespace=demo&name=a")
	b.checkClean()
}
