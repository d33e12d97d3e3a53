package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

func eventListBody(t *testing.T, items ...any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": APIVersion, "metadata": map[string]any{}, "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func post(t *testing.T, url string, body []byte) (int, Summary, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var sum Summary
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &sum); err != nil {
			t.Fatalf("200 with a body that is not a Summary: %s", raw)
		}
	}
	return resp.StatusCode, sum, string(raw)
}

func TestWebhookHandler(t *testing.T) {
	added := cmEvent(event.Added, "1001", at(0, 120))
	st := newJournal(t, append(storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil), added)...)
	var hooked []Summary
	h, err := NewWebhookHandler(newCorrelator(t, st), WithSettleDelay(0),
		WithIngestHook(func(_ context.Context, s Summary, _ error) { hooked = append(hooked, s) }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	create := writeEvent("a1", "alice", "create", at(0, 100), cmBody("1001"))
	get := writeEvent("a2", "bob", "get", at(1, 0), nil)
	code, sum, raw := post(t, srv.URL, eventListBody(t, create, map[string]any{"auditID": 5}, get))
	if code != http.StatusOK || sum.Exact != 1 || sum.SkippedReadOnly != 1 || sum.Malformed != 1 || sum.Recorded != 1 {
		t.Fatalf("POST = %d %s", code, raw)
	}
	if len(sum.Problems) != 1 || sum.Problems[0].Line != 2 {
		t.Errorf("problems %+v, want item 2", sum.Problems)
	}
	if corr := correlationsOf(t, st, added); len(corr[added.EventID]) != 1 || corr[added.EventID][0].Audit.User != "alice" {
		t.Errorf("correlations %+v", corr)
	}
	if len(hooked) != 1 || hooked[0].Exact != 1 {
		t.Errorf("hook saw %+v", hooked)
	}

	// The API server retries a batch it thinks failed: nothing new.
	if code, sum, raw := post(t, srv.URL, eventListBody(t, create)); code != http.StatusOK || sum.Duplicates != 1 || sum.Recorded != 0 {
		t.Errorf("repeated POST = %d %s", code, raw)
	}

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %d, want 405", resp.StatusCode)
	}
	if code, _, raw := post(t, srv.URL, []byte(`{"kind":"EventList","items":[{"auditID"`)); code != http.StatusBadRequest {
		t.Errorf("truncated body = %d %s, want 400", code, raw)
	}
	if code, _, raw := post(t, srv.URL, []byte(`{"kind":"PodList","items":[]}`)); code != http.StatusBadRequest {
		t.Errorf("wrong kind = %d %s, want 400", code, raw)
	}
}

func TestWebhookHandlerLimitsAndFailures(t *testing.T) {
	st := newJournal(t, storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", []storagetest.Item{{
		Ref: storagetest.Ref(cmStream, "ConfigMap", "shop", "settings", cmUID, "1001"), Object: cmBody("1001"),
	}})...)
	c := newCorrelator(t, st)
	small, err := NewWebhookHandler(c, WithMaxBodyBytes(100), WithSettleDelay(0))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(small)
	defer srv.Close()
	body := eventListBody(t, writeEvent("a1", "alice", "create", at(0, 100), cmBody("1001")))
	if code, _, raw := post(t, srv.URL, body); code != http.StatusRequestEntityTooLarge {
		t.Errorf("large body = %d %s, want 413", code, raw)
	}

	// A journal that fails: 500, so the API server retries.
	h, err := NewWebhookHandler(c, WithSettleDelay(0))
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(h)
	defer srv2.Close()
	st.Close()
	if code, _, raw := post(t, srv2.URL, body); code != http.StatusInternalServerError {
		t.Errorf("closed journal = %d %s, want 500", code, raw)
	}

	for name, opts := range map[string][]HandlerOption{
		"zero body":      {WithMaxBodyBytes(0)},
		"negative delay": {WithSettleDelay(-time.Second)},
		"nil clock":      {WithClock(nil)},
		"bad read opts":  {WithReadOptions(WithMaxEventBytes(-1))},
	} {
		if _, err := NewWebhookHandler(c, opts...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := NewWebhookHandler(nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil correlator: err = %v", err)
	}
}

// TestWebhookHandlerWaitsForTheJournal: the webhook delivers an event
// before the collector recorded the change; the handler matches it after
// the settle delay.
func TestWebhookHandlerWaitsForTheJournal(t *testing.T) {
	st := newJournal(t, storagetest.Baseline(cmStream, "b1", at(-30, 0), "900", nil)...)
	clk := clocktesting.NewFakeClock(time.Now())
	h, err := NewWebhookHandler(newCorrelator(t, st), WithSettleDelay(3*time.Second), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	type result struct {
		code int
		sum  Summary
		raw  string
	}
	done := make(chan result, 1)
	body := eventListBody(t, writeEvent("late", "alice", "create", at(0, 100), cmBody("1001")))
	go func() {
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			done <- result{raw: err.Error()}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var sum Summary
		_ = json.Unmarshal(raw, &sum)
		done <- result{resp.StatusCode, sum, string(raw)}
	}()

	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the handler never waited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	added := cmEvent(event.Added, "1001", at(0, 120))
	if _, err := st.Append(context.Background(), []event.Record{added}); err != nil {
		t.Fatal(err)
	}
	clk.Step(3 * time.Second)
	r := <-done
	if r.code != http.StatusOK || r.sum.Exact != 1 || r.sum.Unmatched != 0 || r.sum.Recorded != 1 {
		t.Fatalf("POST = %d %s, want the event matched after the delay", r.code, r.raw)
	}
	if !strings.Contains(r.raw, `"exact":1`) {
		t.Errorf("body %s", r.raw)
	}
}
