package browsertest

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/krply/krply/event"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

// TestOverviewShowsShortLosses serves a journal of three hours in which one
// stream has a gap of 0.3 seconds and another is unavailable for 0.3
// seconds, both a moment before now their evidence ends, and reads the
// pixels of the overview's coverage bars: each loss, and each stretch not
// yet observed, is drawn at least a few pixels wide in its colour and
// marked, though it is far below a pixel of the bar's span.
func TestOverviewShowsShortLosses(t *testing.T) {
	ctx := context.Background()
	j := memory.New()
	t.Cleanup(func() { _ = j.Close() })
	now := time.Now()
	t0, loss := now.Add(-3*time.Hour), now.Add(-90*time.Minute)
	gapped := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "gapped"}
	forbidden := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "forbidden"}
	items := func(s event.Stream, rv string) []storagetest.Item {
		return []storagetest.Item{{Ref: storagetest.Ref(s, "ConfigMap", s.Namespace, "settings", "u-"+s.Namespace, rv),
			Object: storagetest.ConfigMap(s.Namespace, "settings", "u-"+s.Namespace, rv, map[string]string{"color": "blue"})}}
	}
	var recs []event.Record
	for _, s := range []event.Stream{gapped, forbidden} {
		recs = append(recs, storagetest.Baseline(s, "b1-"+s.Namespace, t0, "10", items(s, "5"))...)
	}
	gap := storagetest.Gap(gapped, loss, loss.Add(300*time.Millisecond), "410 Gone: too old resource version", "10")
	relist := storagetest.Baseline(gapped, "b2-gapped", loss.Add(400*time.Millisecond), "20", items(gapped, "5"))
	relist[len(relist)-1].Baseline.ClosesGap = gap.EventID
	recs = append(append(recs, gap), relist...)
	recs = append(recs, storagetest.CoverageChange(forbidden, false, "403 Forbidden: configmaps is forbidden", 403, loss),
		storagetest.CoverageChange(forbidden, true, "readable again", 0, loss.Add(300*time.Millisecond)))
	recs = append(recs, storagetest.Baseline(forbidden, "b2-forbidden", loss.Add(400*time.Millisecond), "20", items(forbidden, "5"))...)
	for _, s := range []event.Stream{gapped, forbidden} {
		recs = append(recs, storagetest.Checkpoint(s, "30", false, now.Add(-2*time.Second)))
	}
	if _, err := j.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t, serve(t, server.NewHandler(j, server.WithUI())))
	b.open("/overview")
	// The colours of the marks (style.css), as a test of a pixel.
	red := func(r, g, bl uint32) bool { return r > 170 && g < 80 && bl < 80 }
	orange := func(r, g, bl uint32) bool { return r > 200 && g > 80 && g < 140 && bl < 50 }
	grey := func(r, g, bl uint32) bool { return near(r, 0x8a) && near(g, 0x8f) && near(bl, 0x98) }
	for _, tc := range []struct {
		stream event.Stream
		kind   string
		colour func(r, g, b uint32) bool
	}{
		{gapped, "gap", red},
		{forbidden, "unavailable", orange},
		{gapped, "unobserved", grey},
		{forbidden, "unobserved", grey},
	} {
		row := `tr[data-stream="` + tc.stream.ID() + `"]`
		if n := b.count(row + ` .seg-mark[data-mark="` + tc.kind + `"][title]`); n != 1 {
			t.Errorf("%s: %d marks of a %s with a title, want 1", tc.stream.ID(), n, tc.kind)
		}
		shot, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.CSS(row+" td.bar-col")))
		if err != nil {
			t.Fatalf("screenshot of the bar of %s: %v", tc.stream.ID(), err)
		}
		if cols, width := columns(t, shot, tc.colour); cols < 3 {
			t.Errorf("%s: the %s is %d pixels wide in a bar of %d, want at least 3", tc.stream.ID(), tc.kind, cols, width)
		}
	}
	b.checkClean()
}

// near says whether an 8-bit component is within antialiasing of want.
func near(v uint32, want int) bool { d := int(v) - want; return d > -16 && d < 16 }

// columns counts the columns of a PNG that hold a pixel of a colour (8-bit
// components), and returns the image's width.
func columns(t *testing.T, shot []byte, colour func(r, g, b uint32) bool) (int, int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode the screenshot: %v", err)
	}
	bounds := img.Bounds()
	n := 0
	for x := bounds.Min.X; x < bounds.Max.X; x++ {
		if hasColour(img, x, colour) {
			n++
		}
	}
	return n, bounds.Dx()
}

func hasColour(img image.Image, x int, colour func(r, g, b uint32) bool) bool {
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		r, g, b, _ := img.At(x, y).RGBA()
		if colour(r>>8, g>>8, b>>8) {
			return true
		}
	}
	return false
}
