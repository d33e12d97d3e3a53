package watch

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// synthServer is a local HTTP server that speaks just enough of the
// Kubernetes API for configmaps across all namespaces: discovery, paginated lists,
// WatchList (sendInitialEvents) and watches, with realistic ~1.7 KB bodies
// (labels, annotations, managedFields, data). The benchmarks use it as the
// list/watch source for the Collector and for a client-go informer alike.
type synthServer struct {
	srv     *httptest.Server
	objects int   // objects in every list
	events  int64 // MODIFIED events each watch sends after its start
	listRV  int   // the lists' resourceVersion
	lists   atomic.Int64
	watches atomic.Int64
}

func newSynthServer(objects int, events int64) *synthServer {
	s := &synthServer{objects: objects, events: events, listRV: objects + 1}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *synthServer) Close() { s.srv.Close() }

func (s *synthServer) Config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, QPS: -1}
}

// body renders configmap i at resourceVersion rv with a value that changes
// with rv (so every event is a new body, as real updates are).
func synthBody(i, rv int) string {
	ns := fmt.Sprintf("team-%02d", i%50)
	name := fmt.Sprintf("settings-%06d", i)
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"` + ns +
		`","uid":"6f1c2d3e-` + fmt.Sprintf("%04x-%04x-%012x", i%65536, rv%65536, i) + `","resourceVersion":"` + strconv.Itoa(rv) +
		`","creationTimestamp":"2026-01-02T03:04:05Z","labels":{"app.kubernetes.io/name":"shop","app.kubernetes.io/component":"api","app.kubernetes.io/part-of":"storefront","tier":"backend"},` +
		`"annotations":{"deployment.kubernetes.io/revision":"` + strconv.Itoa(rv%17) + `","meta.helm.sh/release-name":"storefront","meta.helm.sh/release-namespace":"` + ns + `"},` +
		`"managedFields":[{"manager":"helm","operation":"Update","apiVersion":"v1","time":"2026-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:application.yaml":{},"f:feature-flags":{},"f:log-level":{}},"f:metadata":{"f:annotations":{".":{},"f:meta.helm.sh/release-name":{},"f:meta.helm.sh/release-namespace":{}},"f:labels":{".":{},"f:app.kubernetes.io/component":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},"f:tier":{}}}}},` +
		`{"manager":"kubectl-edit","operation":"Update","apiVersion":"v1","time":"2026-01-03T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:log-level":{}},"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}}]},` +
		`"data":{"log-level":"info-` + strconv.Itoa(rv) + `","feature-flags":"checkout=true,recommendations=false,search-v2=true,new-cart=false","application.yaml":"server:\n  port: 8080\n  shutdownGracePeriod: 30s\ndatabase:\n  host: postgres.storefront.svc.cluster.local\n  port: 5432\n  pool:\n    min: 4\n    max: 32\ncache:\n  ttl: 300s\n  size: 10000\n"}}`
}

// synthDiscovery is the legacy discovery the server answers: configmaps
// in the core group, nothing else.
var synthDiscovery = map[string]string{
	"/api":    `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
	"/apis":   `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","watch"],"shortNames":["cm"]}]}`,
}

func (s *synthServer) serve(w http.ResponseWriter, r *http.Request) {
	if d, ok := synthDiscovery[r.URL.Path]; ok {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(d))
		return
	}
	if r.URL.Path != "/api/v1/configmaps" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		s.watch(w, r)
		return
	}
	s.lists.Add(1)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 {
		limit = s.objects
	}
	start, _ := strconv.Atoi(q.Get("continue"))
	end := min(start+limit, s.objects)
	w.Header().Set("Content-Type", "application/json")
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"` + strconv.Itoa(s.listRV) + `"`)
	if end < s.objects {
		b.WriteString(`,"continue":"` + strconv.Itoa(end) + `"`)
	}
	b.WriteString(`},"items":[`)
	for i := start; i < end; i++ {
		if i > start {
			b.WriteByte(',')
		}
		b.WriteString(synthBody(i, i+1))
	}
	b.WriteString("]}")
	_, _ = w.Write([]byte(b.String()))
}

func (s *synthServer) watch(w http.ResponseWriter, r *http.Request) {
	s.watches.Add(1)
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	write := func(typ, obj string) bool {
		_, err := w.Write([]byte(`{"type":"` + typ + `","object":` + obj + "}\n"))
		return err == nil
	}
	if q.Get("sendInitialEvents") == "true" {
		for i := 0; i < s.objects; i++ {
			if !write("ADDED", synthBody(i, i+1)) {
				return
			}
		}
		write("BOOKMARK", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"`+strconv.Itoa(s.listRV)+
			`","annotations":{"k8s.io/initial-events-end":"true"}}}`)
	}
	if q.Get("resourceVersion") == strconv.Itoa(s.listRV) || q.Get("sendInitialEvents") == "true" {
		for e := int64(0); e < s.events; e++ {
			rv := s.listRV + 1 + int(e)
			if !write("MODIFIED", synthBody(int(e)%1000, rv)) {
				return
			}
		}
	}
	if flusher != nil {
		flusher.Flush()
	}
	<-r.Context().Done()
}

// finalRV is the resourceVersion of the last watch event.
func (s *synthServer) finalRV() string { return strconv.Itoa(s.listRV + int(s.events)) }
