package charttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/krply/krply/krplytest/testenv"
)

const chartDir = "../krply"

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }

// valuesFiles returns the values files under testdata, by name.
func valuesFiles(t *testing.T) map[string]map[string]any {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(paths) < 4 {
		t.Fatalf("values files: %v, %v", paths, err)
	}
	out := map[string]map[string]any{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		vals := map[string]any{}
		if err := yaml.Unmarshal(raw, &vals); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".yaml")] = vals
	}
	return out
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// render renders the chart with vals (validated against
// values.schema.json) as release "krply" in namespace ns.
func render(c *chart.Chart, vals map[string]any, ns string) ([]*unstructured.Unstructured, string, error) {
	return renderOn(c, vals, ns, chartutil.DefaultCapabilities)
}

// renderOn renders as render does, on a cluster with caps.
func renderOn(c *chart.Chart, vals map[string]any, ns string, caps *chartutil.Capabilities) ([]*unstructured.Unstructured, string, error) {
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "krply", Namespace: ns, IsInstall: true}, caps)
	if err != nil {
		return nil, "", err
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		return nil, "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	notes := ""
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			notes = files[name]
			continue
		}
		docs, err := testenv.Manifests([]byte(files[name]))
		if err != nil {
			return nil, "", err
		}
		objs = append(objs, docs...)
	}
	return objs, notes, nil
}

// helm lint finds nothing, with every values file.
func TestLint(t *testing.T) {
	for name, vals := range valuesFiles(t) {
		linter := lint.All(chartDir, vals, "krply", false)
		for _, msg := range linter.Messages {
			if msg.Severity > support.InfoSev {
				t.Errorf("%s: %s", name, msg)
			}
		}
	}
}

// Values the schema refuses.
func TestSchemaRefuses(t *testing.T) {
	c := loadChart(t)
	for what, vals := range map[string]map[string]any{
		"an unknown value":            {"retention": map[string]any{"maxAge": "7d", "maxSize": "1Gi", "minAge": "1h", "diskReserve": "1Mi", "interval": "5m", "keep": true}},
		"named resources without any": {"record": map[string]any{"allResources": false}},
		"a rule on secrets":           {"rbac": map[string]any{"extraRules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}}}}},
		"a wildcard rule":             {"rbac": map[string]any{"extraRules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"widgets"}}}}},
		"a malformed size":            {"retention": map[string]any{"maxAge": "7d", "maxSize": "lots", "minAge": "1h", "diskReserve": "1Mi", "interval": "5m"}},
		"a malformed age":             {"retention": map[string]any{"maxAge": "a week", "maxSize": "1Gi", "minAge": "1h", "diskReserve": "1Mi", "interval": "5m"}},
		"a digest that is not sha256": {"image": map[string]any{"repository": "krply", "digest": "latest"}},
		"an API open to anyone":       {"api": map[string]any{"delegatedAuth": false}},
		"no PostgreSQL replica":       {"postgres": map[string]any{"secretName": "pg", "replicas": 0}},
		"a name that is no DNS label": {"nameOverride": "Krply_History"},
		"an OpenShift guess":          {"openshift": "maybe"},
		"root by UID":                 {"podSecurityContext": map[string]any{"runAsUser": 0}},
		"a ServiceMonitor typo":       {"serviceMonitor": map[string]any{"enable": true}},
		"a malformed scrape interval": {"serviceMonitor": map[string]any{"enabled": true, "interval": "often"}},
	} {
		if _, _, err := render(c, vals, "krply"); err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
			t.Errorf("%s: render = %v, want a schema error", what, err)
		}
	}
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// recorderContainer returns the rendered recorder's container.
func recorderContainer(t *testing.T, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	deploys := find(objs, "Deployment")
	if len(deploys) != 1 {
		t.Fatalf("%d Deployments, want 1", len(deploys))
	}
	containers, _, _ := unstructured.NestedSlice(deploys[0].Object, "spec", "template", "spec", "containers")
	return containers[0].(map[string]any)
}

// checkAPI checks that the recorder serves the query API as vals ask, on
// the port its probes and the Service use.
func checkAPI(t *testing.T, objs []*unstructured.Unstructured, vals map[string]any, args []string) {
	t.Helper()
	c := recorderContainer(t, objs)
	delegated, found, _ := unstructured.NestedBool(vals, "api", "delegatedAuth")
	delegated = delegated || !found
	tokens, _, _ := unstructured.NestedString(vals, "api", "tokenSecret")
	tls, _, _ := unstructured.NestedString(vals, "api", "tlsSecret")
	writes, _, _ := unstructured.NestedBool(vals, "api", "allowWrites")
	ui, _, _ := unstructured.NestedBool(vals, "api", "ui")
	for flag, want := range map[string]bool{
		"--listen=:8080": true, "--delegated-auth": delegated, "--listen-token-file=/etc/krply/tokens/tokens": tokens != "",
		"--tls-cert-file=/etc/krply/tls/tls.crt": tls != "", "--tls-key-file=/etc/krply/tls/tls.key": tls != "",
		"--listen-allow-writes": writes, "--ui": ui, "--metrics-addr=:8080": false,
	} {
		if slices.Contains(args, flag) != want {
			t.Errorf("args %q: %s given %v, want %v", args, flag, !want, want)
		}
	}
	scheme := "HTTP"
	if tls != "" {
		scheme = "HTTPS"
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		get, _, _ := unstructured.NestedMap(c, probe, "httpGet")
		if get["port"] != "http" || get["scheme"] != scheme {
			t.Errorf("%s %v, want port http over %s", probe, get, scheme)
		}
	}
	ports, _, _ := unstructured.NestedSlice(c, "ports")
	if len(ports) != 1 || fmt.Sprint(ports[0]) != "map[containerPort:8080 name:http]" {
		t.Errorf("container ports %v, want http on 8080", ports)
	}
	services := find(objs, "Service")
	if len(services) != 1 {
		t.Fatalf("%d Services, want the API's", len(services))
	}
	sp, _, _ := unstructured.NestedSlice(services[0].Object, "spec", "ports")
	if len(sp) != 1 || fmt.Sprint(sp[0]) != "map[name:http port:8080 targetPort:http]" {
		t.Errorf("Service ports %v, want http 8080 to the recorder's http", sp)
	}
	pg, _, _ := unstructured.NestedString(vals, "postgres", "secretName")
	mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts")
	if got, want := len(mounts), 1+btoi(pg == "")+btoi(tokens != "")+btoi(tls != ""); got != want {
		t.Errorf("%d volume mounts, want %d (tmp, the journal's volume without PostgreSQL, and the API's Secrets)", got, want)
	}
}

// checkNotes checks that the notes scrape /metrics with a bearer token,
// which the recorder's port asks for as the API does, and with
// api.delegatedAuth name the RBAC rule a scraper needs.
func checkNotes(t *testing.T, notes string, vals map[string]any) {
	t.Helper()
	scrapes := 0
	for _, line := range strings.Split(notes, "\n") {
		if strings.Contains(line, "curl") && strings.Contains(line, "/metrics") {
			scrapes++
			if !strings.Contains(line, `-H "Authorization: Bearer $TOKEN"`) {
				t.Errorf("the notes scrape /metrics without a token: %q", line)
			}
		}
	}
	if scrapes != 1 {
		t.Errorf("the notes scrape /metrics %d times, want once:\n%s", scrapes, notes)
	}
	delegated, found, _ := unstructured.NestedBool(vals, "api", "delegatedAuth")
	want := delegated || !found
	if rule := `nonResourceURLs: ["/metrics"], verbs: ["get"]`; strings.Contains(notes, rule) != want {
		t.Errorf("delegatedAuth %v: the notes name the rule %s: %v, want %v\n%s", want, rule, !want, want, notes)
	}
}

// checkStore checks where the rendered recorder keeps its journal: a
// SQLite file on the pod's volume, one replica recreated; or with
// postgres.secretName the URL of that Secret, several replicas with a
// PodDisruptionBudget, no claim and no disk reserve.
func checkStore(t *testing.T, objs []*unstructured.Unstructured, vals map[string]any, args []string) {
	t.Helper()
	c := recorderContainer(t, objs)
	env, _, _ := unstructured.NestedSlice(c, "env")
	deploy := find(objs, "Deployment")[0]
	replicas, _, _ := unstructured.NestedFieldNoCopy(deploy.Object, "spec", "replicas")
	strategy, _, _ := unstructured.NestedString(deploy.Object, "spec", "strategy", "type")
	pdbs := find(objs, "PodDisruptionBudget")
	reserve := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--disk-reserve=") })
	pg, _, _ := unstructured.NestedString(vals, "postgres", "secretName")
	if pg == "" {
		if len(env) != 1 || fmt.Sprint(env[0]) != "map[name:KRPLY_JOURNAL value:/var/lib/krply/krply.db]" || fmt.Sprint(replicas) != "1" || strategy != "Recreate" || len(pdbs) != 0 || !reserve {
			t.Errorf("SQLite: env %v, %v replicas, strategy %q, %d budgets, --disk-reserve %v; want the file on the volume, one replica recreated, no budget, a reserve",
				env, replicas, strategy, len(pdbs), reserve)
		}
		return
	}
	want, _, _ := unstructured.NestedFieldNoCopy(vals, "postgres", "replicas")
	if len(env) != 1 || fmt.Sprint(env[0]) != "map[name:KRPLY_JOURNAL valueFrom:map[secretKeyRef:map[key:dsn name:"+pg+"]]]" {
		t.Errorf("PostgreSQL: env %v, want KRPLY_JOURNAL from Secret %s", env, pg)
	}
	if fmt.Sprint(replicas) != fmt.Sprint(want) || strategy == "Recreate" || reserve || len(find(objs, "PersistentVolumeClaim")) != 0 {
		t.Errorf("PostgreSQL: %v replicas (want %v), strategy %q, --disk-reserve %v, %d claims", replicas, want, strategy, reserve, len(find(objs, "PersistentVolumeClaim")))
	}
	if len(pdbs) != 1 {
		t.Fatalf("PostgreSQL with %v replicas: %d budgets, want one", want, len(pdbs))
	}
	if min, _, _ := unstructured.NestedFieldNoCopy(pdbs[0].Object, "spec", "minAvailable"); fmt.Sprint(min) != "1" {
		t.Errorf("PostgreSQL with %v replicas: the budget keeps %v, want 1", want, min)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Every values file renders to objects the control plane accepts (a
// server-side dry run), whose recorder pod passes Pod Security
// "restricted" and whose args the recorder accepts; the recorder's rules
// are those of the plain manifests.
func TestRenderAndApply(t *testing.T) {
	env := testenv.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := loadChart(t)
	record := buildRecorder(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, ns := range []string{"sandbox-a", "sandbox-b"} {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if _, err := dyn.Resource(nsGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	restricted := env.RestrictedNamespace(t)
	plain := plainRecorderRules(t)
	for name, vals := range valuesFiles(t) {
		t.Run(name, func(t *testing.T) {
			ns := env.CreateNamespace(t)
			objs, notes, err := render(c, vals, ns)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) == 0 || notes == "" {
				t.Fatalf("rendered %d objects, notes %q", len(objs), notes)
			}
			if err := env.ApplyManifests(ctx, objs, true); err != nil {
				t.Fatalf("server-side dry run: %v", err)
			}
			if name == "sandbox" {
				if len(find(objs, "Deployment")) != 0 || len(find(objs, "RoleBinding")) != 2 {
					t.Fatalf("sandbox: %d Deployments, %d RoleBindings; want replay's RBAC only, one binding per namespace",
						len(find(objs, "Deployment")), len(find(objs, "RoleBinding")))
				}
				return
			}
			if err := env.AdmitPods(ctx, objs, restricted); err != nil {
				t.Fatalf("Pod Security restricted: %v", err)
			}
			c := recorderContainer(t, objs)
			command, _, _ := unstructured.NestedStringSlice(c, "command")
			args, _, _ := unstructured.NestedStringSlice(c, "args")
			if !slices.Equal(command, []string{"/kubectl-krply"}) || len(args) == 0 || args[0] != "record" {
				t.Fatalf("command %q, args %q; want the image's /kubectl-krply record", command, args)
			}
			if rule, _, _ := unstructured.NestedString(vals, "record", "rule"); rule != "" && !slices.Contains(args, "--rule="+rule) {
				t.Fatalf("args %q; want --rule=%s", args, rule)
			}
			checkAPI(t, objs, vals, args)
			checkNotes(t, notes, vals)
			checkStore(t, objs, vals, args)
			// The recorder parses every flag before it looks at
			// --version: exit 0 means it accepts them all.
			if out, err := exec.Command(record, append(args, "--version")...).CombinedOutput(); err != nil {
				t.Fatalf("the recorder refuses the chart's args %q: %v\n%s", args, err, out)
			}
			roles := find(objs, "ClusterRole")
			if len(roles) != 2 || roles[0].GetName() != "krply" || roles[1].GetName() != "krply-history-reader" {
				t.Fatalf("%d ClusterRoles, want the recorder's and its readers'", len(roles))
			}
			rules, _, _ := unstructured.NestedSlice(roles[0].Object, "rules")
			extra, _, _ := unstructured.NestedSlice(vals, "rbac", "extraRules")
			// The plain manifests' rules: what it reads, then the two
			// reviews of --delegated-auth, which the chart grants only
			// with api.delegatedAuth.
			reads, auth := plain[:len(plain)-2], plain[len(plain)-2:]
			want := len(reads) + len(extra)
			if slices.Contains(args, "--delegated-auth") {
				want += len(auth)
			}
			if len(rules) != want {
				t.Fatalf("%d rules, want the plain manifests' %d, %d extra and the reviews if --delegated-auth", len(rules), len(reads), len(extra))
			}
			if got, want := mustYAML(t, rules[:len(reads)]), mustYAML(t, reads); got != want {
				t.Fatalf("the chart's recorder rules differ from deploy/recorder/rbac.yaml:\n%s\nwant:\n%s", got, want)
			}
			if slices.Contains(args, "--delegated-auth") {
				if got, want := mustYAML(t, rules[len(rules)-2:]), mustYAML(t, auth); got != want {
					t.Fatalf("the chart's --delegated-auth rules differ from deploy/recorder/rbac.yaml:\n%s\nwant:\n%s", got, want)
				}
			}
		})
	}
}

// buildRecorder builds the image's binary, kubectl-krply (a nested
// module), and returns its path.
func buildRecorder(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-krply")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = "../../../cmd/kubectl-krply"
	// The plugin's module resolves the core module through the repository's go.work.
	work, err := filepath.Abs("../../../go.work")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "GOWORK="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/kubectl-krply: %v\n%s", err, out)
	}
	return bin
}

// plainRecorderRules returns the rules of the recorder's ClusterRole in
// deploy/recorder/rbac.yaml.
func plainRecorderRules(t *testing.T) []any {
	t.Helper()
	raw, err := os.ReadFile("../../recorder/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.Manifests(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range find(objs, "ClusterRole") {
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		return rules
	}
	t.Fatal("no ClusterRole in deploy/recorder/rbac.yaml")
	return nil
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
