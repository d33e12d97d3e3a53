package browsertest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/memory"
)

// TestMain shares one control plane among the tests that play the
// incidents of krplytest/incident; the others start their own.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, incident.EnvOptions()...))
}

// TestWhyView opens the Why view for the crashing Pod of the incident
// whose culprit's stream has a gap: the culprit comes first, marked
// uncertain, the gap is drawn hatched on the time axis, the banner says
// the answer is incomplete; the object view and the namespace view link
// to it.
func TestWhyView(t *testing.T) {
	chromium(t)
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	if err := (&incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 2, Events: true, GapOverChange: true}).Write(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, serve(t, server.NewHandler(store, server.WithUI())))
	b.open("/why?" + q("tz", "utc", "cluster", "c1", "resource", "pods", "namespace", "shop", "name", "web-1-0", "from", rfc(incident.T0)))

	first := `tr.candidate[data-rank="1"]`
	if got := b.text(first + " .summary"); !strings.HasPrefix(got, `configmaps shop/settings: data.color "blue" → "chartreuse"`) {
		t.Errorf("first candidate %q; want the ConfigMap's key change\n%s", got, b.text("#view"))
	}
	if !strings.Contains(b.text(first+" .caveats"), "seen only by a relist") {
		t.Errorf("the first candidate does not say it is uncertain: %q", b.text(first))
	}
	if b.count(`.banner[data-complete="false"]`) != 1 || !strings.Contains(b.text(".banner"), "core/v1/configmaps/shop") {
		t.Errorf("no incomplete banner naming the ConfigMaps stream: %q", b.text(".banner"))
	}
	var gaps []struct {
		Stream string
		Fill   string
		Width  float64
	}
	b.eval(`[...document.querySelectorAll('.why-axis rect.gap')].map(e => ({stream: e.dataset.stream, fill: getComputedStyle(e).fill, width: e.width.baseVal.value}))`, &gaps)
	if len(gaps) != 1 || gaps[0].Stream != "c1/core/v1/configmaps/shop" || !strings.Contains(gaps[0].Fill, "hatch-gap") || gaps[0].Width < 30 {
		t.Errorf("gaps drawn %+v; want the ConfigMaps stream's, hatched, about a twelfth of the axis wide", gaps)
	}
	if n := b.count(`.why-axis circle[data-rank="1"]`); n != 1 {
		t.Errorf("%d marks of the first candidate on the axis", n)
	}
	if n := b.count(".why-event"); n != 1 {
		t.Errorf("%d Events listed, want the BackOff", n)
	}
	b.finish("why")

	// Reachable from the object view and the namespace view.
	b.open("/object?" + q("tz", "utc", "cluster", "c1", "resource", "pods", "namespace", "shop", "name", "web-1-0"))
	if b.count(`a.why-link[href*="#/why?"]`) != 1 {
		t.Errorf("the object view has no link to Why")
	}
	b.open("/namespace?" + q("tz", "utc", "cluster", "c1", "namespace", "shop", "at", rfc(incident.Crashed.Add(time.Minute))))
	if n := b.count(`tr[data-kind="Pod"][data-name="web-1-0"] a.why-link`); n != 1 {
		t.Errorf("the namespace view has %d links to Why for web-1-0", n)
	}
	b.finish("why-links")
}

// TestWhyIncidents plays the incidents of krplytest/incident on a real
// control plane and opens the Why view for each Pod that broke: the
// culprit is the first candidate, with its reason and no caveat, and the
// banner says the answer is complete; for the Pod whose culprit's stream
// has a gap, the banner says incomplete naming that stream, the gap is
// drawn hatched on the time axis and the first candidate is the culprit,
// marked uncertain.
func TestWhyIncidents(t *testing.T) {
	chromium(t)
	store := krplytest.NewStore(t)
	p := incident.Play(t, testenv.Shared(t), store)
	b := newBrowser(t, serve(t, server.NewHandler(store, server.WithUI())))
	first := `tr.candidate[data-rank="1"]`
	open := func(c incident.Case) {
		t.Helper()
		b.open("/why?" + q("tz", "utc", "cluster", p.Cluster, "resource", "pods", "namespace", p.Namespace, "name", c.Pod, "from", rfc(p.From)))
		if got := b.text(first + " .summary"); !strings.HasPrefix(got, c.Summary) {
			t.Errorf("%s: first candidate %q; want %q\n%s", c.Name, got, c.Summary, b.text("#view"))
		}
		if got := b.text(first + " .reasons"); !strings.Contains(got, c.Reason) {
			t.Errorf("%s: the first candidate's reasons %q lack %q", c.Name, got, c.Reason)
		}
	}
	for _, c := range p.Incidents {
		open(c)
		if b.count(`.banner[data-complete="true"]`) != 1 || b.count(first+" .caveats") != 0 || b.count(".why-axis rect.gap") != 0 {
			t.Errorf("%s: not shown as complete and certain: banner %q, first candidate %q", c.Name, b.text(".banner"), b.text(first))
		}
		b.checkClean()
	}

	gap := p.PlayGap()
	open(gap)
	stream := "core/v1/configmaps/" + p.Namespace
	if b.count(`.banner[data-complete="false"]`) != 1 || !strings.Contains(b.text(".banner"), stream) {
		t.Errorf("no incomplete banner naming the ConfigMaps stream: %q", b.text(".banner"))
	}
	if b.text(first+" .caveats") == "" {
		t.Errorf("the first candidate is not marked uncertain: %q", b.text(first))
	}
	var gaps []struct {
		Stream string
		Fill   string
		Width  float64
	}
	b.eval(`[...document.querySelectorAll('.why-axis rect.gap')].map(e => ({stream: e.dataset.stream, fill: getComputedStyle(e).fill, width: e.width.baseVal.value}))`, &gaps)
	var drawn bool
	for _, g := range gaps {
		drawn = drawn || strings.HasSuffix(g.Stream, "/"+stream) && strings.Contains(g.Fill, "hatch-gap") && g.Width >= 3
	}
	if !drawn {
		t.Errorf("gaps drawn %+v; want the ConfigMaps stream's, hatched", gaps)
	}
	b.checkClean()
}
