package watch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// TestIntegrationBodiesAsSent: a Collector made by NewCollectorForConfig
// records every object byte for byte as the API server sends it — list
// items (paginated or WatchList) and watch events alike, with the server's
// key order and escaping — which is what a plain GET returns.
func TestIntegrationBodiesAsSent(t *testing.T) {
	env := testenv.Shared(t)
	for _, mode := range []WatchListMode{WatchListOff, WatchListOn} {
		t.Run("watchlist="+string(mode), func(t *testing.T) {
			ns := env.CreateNamespace(t)
			dyn := dynFor(t, env.Config())
			value := "a <b> & \"c\"\n\u00e9 \u2713 \\u0041"
			for i := range 3 {
				cm := configMap(ns, fmt.Sprintf("cm-%d", i), value)
				unstructured.RemoveNestedField(cm.Object, "metadata", "uid")
				_ = unstructured.SetNestedStringMap(cm.Object, map[string]string{"zeta": "1", "alpha": "2"}, "metadata", "labels")
				if _, err := dyn.Resource(cmGVR).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			st := newMemory(t)
			c := newReal(t, env.Config(), st, realOpts(t, ns, WithWatchList(mode), WithPageSize(2))...)
			run(t, c)
			waitSync(t, c)
			mustUpdateCM(t, dyn, ns, "cm-0", value+" again")
			mustCreateCM(t, dyn, ns, "cm-new", value)
			waitJournalMatchesServer(t, dyn, st, ns)

			alive, err := st.AliveAt(context.Background(), storage.AliveQuery{At: time.Now(), StreamID: nsStreamID("it", ns)})
			if err != nil {
				t.Fatal(err)
			}
			synthetic := map[string]bool{}
			for _, rec := range alive {
				synthetic[rec.Resource.Name] = rec.Synthetic
				want := getRaw(t, env.Config(), "/api/v1/namespaces/"+ns+"/configmaps/"+rec.Resource.Name)
				if !bytes.Equal(rec.Object, want) {
					t.Errorf("%s: recorded\n%s\nthe server sends\n%s", rec.Resource.Name, rec.Object, want)
				}
				if rec.ObjectHash != event.ObjectHash(want) {
					t.Errorf("%s: hash %s, want the hash of the bytes sent", rec.Resource.Name, rec.ObjectHash)
				}
			}
			if want := map[string]bool{"cm-0": false, "cm-1": true, "cm-2": true, "cm-new": false}; fmt.Sprint(synthetic) != fmt.Sprint(want) {
				t.Fatalf("alive objects (name: from the baseline) = %v, want %v", synthetic, want)
			}
		})
	}
}

// getRaw returns the body of a JSON GET of path, without its trailing
// newline, through a plain HTTP client.
func getRaw(t *testing.T, cfg *rest.Config, path string) []byte {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", path, resp.StatusCode, err, body)
	}
	return bytes.TrimSuffix(body, []byte("\n"))
}
