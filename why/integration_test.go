package why_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, incident.EnvOptions()...))
}

// TestIncidents plays the four incidents of krplytest/incident and the
// one with a gap over the culprit's stream on the local control plane,
// and asks why each Pod broke, of the library and of the query API: the
// culprit must come first, with who made it; in the gap case the answer
// must name the gap and present no candidate as certain.
func TestIncidents(t *testing.T) {
	store := krplytest.NewStore(t)
	p := incident.Play(t, testenv.Shared(t), store)
	ctx := t.Context()
	ns := p.Namespace

	ex, err := why.New(store)
	if err != nil {
		t.Fatal(err)
	}
	explain := func(pod string) *why.Answer {
		t.Helper()
		a, err := ex.Explain(ctx, p.Query(pod))
		if err != nil {
			t.Fatalf("explain %s: %v", pod, err)
		}
		return a
	}
	for _, c := range p.Incidents {
		t.Run(c.Name, func(t *testing.T) {
			if err := c.Check(explain(c.Pod)); err != nil {
				t.Error(err)
			}
		})
	}

	// The query API and its Go client give the same answers.
	srv := httptest.NewServer(server.NewHandler(store))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	sameThroughAPI := func(t *testing.T, pod string) {
		t.Helper()
		got, err := c.Why(ctx, p.Query(pod))
		if err != nil {
			t.Fatalf("%s: %v", pod, err)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(explain(pod))
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: the query API answers\n%s\nthe library\n%s", pod, gotJSON, wantJSON)
		}
	}
	p.Stop()
	t.Run("through the query API", func(t *testing.T) {
		for _, pod := range p.Pods {
			sameThroughAPI(t, pod)
		}
	})

	t.Run("graph and events", func(t *testing.T) {
		a := explain(p.Incidents[0].Pod)
		want := []string{"replicasets.apps " + ns + "/shop-1-1", "deployments.apps " + ns + "/shop-1", "configmaps " + ns + "/settings-1", "nodes node-1", "serviceaccounts " + ns + "/default"}
		got := map[string]why.Node{}
		for _, n := range a.Nodes {
			got[describeID(n.ID)] = n
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Errorf("graph lacks %s: %v", w, a.Nodes)
			}
		}
		if n := got["configmaps "+ns+"/settings-1"]; len(n.Keys) != 1 || n.Keys[0] != "color" || n.Distance != 1 {
			t.Errorf("settings-1 node %+v; want the key color, one edge away", n)
		}
		if !a.EventsRecorded || len(a.Events) != 1 || a.Events[0].Reason != "BackOff" {
			t.Errorf("events %+v (recorded %v); want the BackOff event", a.Events, a.EventsRecorded)
		}
		raw, _ := json.Marshal(explain(p.Incidents[3].Pod))
		for _, secret := range []string{"hunter2", "correct horse", base64.StdEncoding.EncodeToString([]byte("hunter2"))} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("the answer shows a Secret value (%q)", secret)
			}
		}
		if !strings.Contains(string(raw), `"sha256:`) {
			t.Errorf("the answer lacks the hashes of the Secret's values")
		}
	})

	gap := p.PlayGap()
	p.Stop()
	t.Run(gap.Name, func(t *testing.T) {
		if err := gap.CheckGap(explain(gap.Pod)); err != nil {
			t.Error(err)
		}
		sameThroughAPI(t, gap.Pod)
	})
}

func describeID(id storage.ObjectID) string {
	r := id.Resource
	if id.Group != "" {
		r += "." + id.Group
	}
	if id.Namespace == "" {
		return r + " " + id.Name
	}
	return r + " " + id.Namespace + "/" + id.Name
}
