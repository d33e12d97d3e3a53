package charttest

import (
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/recorder"
)

// podTemplate returns the rendered recorder's pod template.
func podTemplate(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	deploys := find(objs, "Deployment")
	if len(deploys) != 1 {
		t.Fatalf("%d Deployments, want 1", len(deploys))
	}
	tmpl, _, _ := unstructured.NestedMap(deploys[0].Object, "spec", "template")
	return tmpl
}

func mustRender(t *testing.T, vals map[string]any, caps *chartutil.Capabilities) []*unstructured.Unstructured {
	t.Helper()
	objs, _, err := renderOn(loadChart(t), vals, "krply", caps)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The probes: liveness on /livez, which the recorder answers from its
// first moment (also while it migrates a journal), with the timings
// recorder.TestMigrationUnderProbes probes with; readiness on the checks
// serving answers needs (recorder.ReadyzServing), not on sync, degraded
// streams or retention pressure.
func TestProbes(t *testing.T) {
	c := recorderContainer(t, mustRender(t, map[string]any{}, chartutil.DefaultCapabilities))
	live, _, _ := unstructured.NestedMap(c, "livenessProbe")
	if got := fmt.Sprint(live); got != "map[failureThreshold:3 httpGet:map[path:/livez port:http scheme:HTTP] periodSeconds:20 timeoutSeconds:1]" {
		t.Errorf("livenessProbe %s; want /livez every 20s, 1s timeout, 3 failures", got)
	}
	ready, _, _ := unstructured.NestedMap(c, "readinessProbe")
	if path, _, _ := unstructured.NestedString(ready, "httpGet", "path"); path != recorder.ReadyzServing {
		t.Errorf("readinessProbe path %q, want %q", path, recorder.ReadyzServing)
	}
	if _, found := c["startupProbe"]; found {
		t.Errorf("a startupProbe %v: /livez answers from the start, a migration needs none", c["startupProbe"])
	}
}

// Pods carry the standard app.kubernetes.io labels and podLabels; names
// follow nameOverride and fullnameOverride.
func TestNamesAndLabels(t *testing.T) {
	tmpl := podTemplate(t, mustRender(t, map[string]any{"podLabels": map[string]any{"team": "platform"}}, chartutil.DefaultCapabilities))
	labels, _, _ := unstructured.NestedStringMap(tmpl, "metadata", "labels")
	for k, v := range map[string]string{
		"app.kubernetes.io/name": "krply", "app.kubernetes.io/instance": "krply", "app.kubernetes.io/component": "recorder",
		"app.kubernetes.io/part-of": "krply", "app.kubernetes.io/managed-by": "Helm", "team": "platform",
	} {
		if labels[k] != v {
			t.Errorf("pod label %s = %q, want %q (labels %v)", k, labels[k], v, labels)
		}
	}
	if labels["app.kubernetes.io/version"] == "" || !strings.HasPrefix(labels["helm.sh/chart"], "krply-") {
		t.Errorf("pod labels %v lack the version and the chart", labels)
	}

	for _, tc := range []struct {
		vals      map[string]any
		name, app string
	}{
		{map[string]any{"nameOverride": "history"}, "krply-history", "history"},
		{map[string]any{"fullnameOverride": "recorder-eu"}, "recorder-eu", "krply"},
	} {
		objs := mustRender(t, tc.vals, chartutil.DefaultCapabilities)
		for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "ClusterRole"} {
			if got := find(objs, kind)[0].GetName(); got != tc.name {
				t.Errorf("%v: %s %q, want %q", tc.vals, kind, got, tc.name)
			}
		}
		if got := find(objs, "PersistentVolumeClaim")[0].GetName(); got != tc.name+"-journal" {
			t.Errorf("%v: claim %q", tc.vals, got)
		}
		sel, _, _ := unstructured.NestedStringMap(find(objs, "Service")[0].Object, "spec", "selector")
		pod, _, _ := unstructured.NestedStringMap(podTemplate(t, objs), "metadata", "labels")
		if sel["app.kubernetes.io/name"] != tc.app || pod["app.kubernetes.io/name"] != tc.app {
			t.Errorf("%v: Service selects %v, pods labelled %v; want name %s", tc.vals, sel, pod, tc.app)
		}
	}
}

// The security contexts come from values. By default they fix no user
// (the image's applies); on OpenShift (auto-detected, or openshift: true)
// the user and groups are left to the SCC even when values give them.
func TestSecurityContext(t *testing.T) {
	openshift := chartutil.DefaultCapabilities.Copy()
	openshift.APIVersions = append(openshift.APIVersions, "security.openshift.io/v1")
	pinned := map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
		"securityContext": map[string]any{"runAsUser": 1000, "readOnlyRootFilesystem": true}}
	for _, tc := range []struct {
		what           string
		vals           map[string]any
		caps           *chartutil.Capabilities
		pod, container string
	}{
		{"the defaults", map[string]any{}, chartutil.DefaultCapabilities,
			"map[fsGroup:65532 runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]",
			"map[allowPrivilegeEscalation:false capabilities:map[drop:[ALL]] readOnlyRootFilesystem:true runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]"},
		{"the defaults on OpenShift", map[string]any{}, openshift,
			"map[runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]",
			"map[allowPrivilegeEscalation:false capabilities:map[drop:[ALL]] readOnlyRootFilesystem:true runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]"},
		{"openshift false on OpenShift", map[string]any{"openshift": false}, openshift,
			"map[fsGroup:65532 runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]", ""},
		{"openshift true elsewhere", map[string]any{"openshift": true}, chartutil.DefaultCapabilities,
			"map[runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]", ""},
		{"a pinned user", pinned, chartutil.DefaultCapabilities,
			"map[fsGroup:1000 runAsGroup:1000 runAsNonRoot:true runAsUser:1000 seccompProfile:map[type:RuntimeDefault]]",
			"map[allowPrivilegeEscalation:false capabilities:map[drop:[ALL]] readOnlyRootFilesystem:true runAsNonRoot:true runAsUser:1000 seccompProfile:map[type:RuntimeDefault]]"},
		{"a pinned user on OpenShift", pinned, openshift, "map[runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]",
			"map[allowPrivilegeEscalation:false capabilities:map[drop:[ALL]] readOnlyRootFilesystem:true runAsNonRoot:true seccompProfile:map[type:RuntimeDefault]]"},
	} {
		tmpl := podTemplate(t, mustRender(t, tc.vals, tc.caps))
		pod, _, _ := unstructured.NestedMap(tmpl, "spec", "securityContext")
		if got := fmt.Sprint(pod); got != tc.pod {
			t.Errorf("%s: pod securityContext %s, want %s", tc.what, got, tc.pod)
		}
		containers, _, _ := unstructured.NestedSlice(tmpl, "spec", "containers")
		sc, _, _ := unstructured.NestedMap(containers[0].(map[string]any), "securityContext")
		if got := fmt.Sprint(sc); tc.container != "" && got != tc.container {
			t.Errorf("%s: container securityContext %s, want %s", tc.what, got, tc.container)
		}
	}
}

// The ServiceMonitor is off by default; enabled, it scrapes /metrics on
// the recorder's port with the scheme of the API and the token, and
// selects the recorder's Service.
func TestServiceMonitor(t *testing.T) {
	if sm := find(mustRender(t, map[string]any{}, chartutil.DefaultCapabilities), "ServiceMonitor"); len(sm) != 0 {
		t.Fatalf("a ServiceMonitor by default: %v", sm)
	}
	for _, tc := range []struct {
		vals   map[string]any
		scheme string
	}{
		{map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}}, "http"},
		{map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "1m", "scrapeTimeout": "10s",
			"tlsConfig": map[string]any{"serverName": "krply"}}, "api": map[string]any{"tlsSecret": "krply-serving", "delegatedAuth": true}}, "https"},
	} {
		objs := mustRender(t, tc.vals, chartutil.DefaultCapabilities)
		sms := find(objs, "ServiceMonitor")
		if len(sms) != 1 {
			t.Fatalf("%v: %d ServiceMonitors, want 1", tc.vals, len(sms))
		}
		sm := sms[0]
		if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetName() != "krply" || sm.GetNamespace() != "krply" {
			t.Errorf("ServiceMonitor %s %s/%s", sm.GetAPIVersion(), sm.GetNamespace(), sm.GetName())
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) != 1 {
			t.Fatalf("endpoints %v", endpoints)
		}
		ep := endpoints[0].(map[string]any)
		if ep["port"] != "http" || ep["path"] != "/metrics" || ep["scheme"] != tc.scheme || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
			t.Errorf("endpoint %v: want /metrics on port http over %s with the ServiceAccount's token", ep, tc.scheme)
		}
		if tc.scheme == "https" && (ep["interval"] != "1m" || ep["scrapeTimeout"] != "10s" || fmt.Sprint(ep["tlsConfig"]) != "map[serverName:krply]") {
			t.Errorf("endpoint %v: want the interval, timeout and tlsConfig of values", ep)
		}
		if tc.scheme == "http" && sm.GetLabels()["release"] != "prom" {
			t.Errorf("labels %v lack release: prom", sm.GetLabels())
		}
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		svc := find(objs, "Service")[0].GetLabels()
		for k, v := range sel {
			if svc[k] != v {
				t.Errorf("the ServiceMonitor selects %v; the Service is labelled %v", sel, svc)
			}
		}
	}
}
