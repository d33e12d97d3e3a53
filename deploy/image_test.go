package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// dockerfile returns the instructions of the repository's Dockerfile, one
// line each (continuations joined), comments left out.
func dockerfile(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(string(raw), "\\\n", " "), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// The image as far as it can be checked without a container runtime: the
// build stage's build script compiles the plugin, the version is stamped,
// the final stage runs as non-root with the plugin as entrypoint, and the
// manifests run its recorder with flags it accepts, serving the query API
// with delegated authentication on the port the probes and the Service
// use, as the user the image names, on a read-only root filesystem.
func TestImage(t *testing.T) {
	lines := dockerfile(t)
	want := []string{
		"ARG GO_IMAGE=golang:1.26",
		"ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot",
		"FROM ${GO_IMAGE} AS build",
		"RUN VERSION=${VERSION} hack/image-binaries.sh /out",
		"FROM ${BASE_IMAGE}",
		"COPY --from=build /out/ /",
		"USER 65532:65532",
		`ENTRYPOINT ["/kubectl-krply"]`,
	}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	// The final stage's OCI labels carry the release's build arguments
	// (make release writes them to dist/image-build-args).
	all := strings.Join(lines, "\n")
	for _, w := range []string{
		`org.opencontainers.image.version="${VERSION}"`,
		`org.opencontainers.image.revision="${REVISION}"`,
		`org.opencontainers.image.created="${CREATED}"`,
		`org.opencontainers.image.source="https://github.com/krply/krply"`,
		`org.opencontainers.image.licenses="Apache-2.0"`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("Dockerfile's labels lack %s", w)
		}
	}
	if froms := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !strings.HasPrefix(l, "FROM ") }); len(froms) != 2 {
		t.Errorf("Dockerfile stages %q, want a build stage and a final one", froms)
	}

	// The build stage's script, run here.
	out := t.TempDir()
	build := exec.Command("hack/image-binaries.sh", out)
	build.Dir = ".."
	build.Env = append(os.Environ(), "VERSION=v0.0.0-image-test")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/image-binaries.sh: %v\n%s", err, msg)
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 || entries[0].Name() != "kubectl-krply" {
		t.Fatalf("the image's binaries: %v, %v; want kubectl-krply alone", entries, err)
	}
	plugin := filepath.Join(out, "kubectl-krply")
	for _, args := range [][]string{{"record", "--version"}, {"version"}} {
		if v, err := exec.Command(plugin, args...).CombinedOutput(); err != nil || string(v) != "kubectl-krply v0.0.0-image-test\n" {
			t.Fatalf("kubectl-krply %v = %q, %v", args, v, err)
		}
	}

	// The manifests run the entrypoint as the image's user.
	objs := manifests(t, "recorder/recorder.yaml")
	deployments := 0
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		deployments++
		spec, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
		if uid, _, _ := unstructured.NestedFieldNoCopy(spec, "securityContext", "runAsUser"); fmt.Sprint(uid) != "65532" {
			t.Errorf("runAsUser %v, want the image's 65532", uid)
		}
		containers, _, _ := unstructured.NestedSlice(spec, "containers")
		c := containers[0].(map[string]any)
		command, _, _ := unstructured.NestedStringSlice(c, "command")
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		if !slices.Equal(command, []string{"/kubectl-krply"}) || len(args) == 0 || args[0] != "record" {
			t.Errorf("command %q, args %q; want the image's entrypoint and record", command, args)
		}
		for _, want := range []string{"--listen=:8080", "--delegated-auth", "--all-resources", "--retention=30d", "--max-size=3Gi"} {
			if !slices.Contains(args, want) {
				t.Errorf("the recorder's args %q lack %s", args, want)
			}
		}
		env, _, _ := unstructured.NestedSlice(c, "env")
		if len(env) != 1 || fmt.Sprint(env[0]) != "map[name:KRPLY_JOURNAL value:/var/lib/krply/krply.db]" {
			t.Errorf("env %v, want KRPLY_JOURNAL on the journal's volume", env)
		}
		ports, _, _ := unstructured.NestedSlice(c, "ports")
		if len(ports) != 1 || fmt.Sprint(ports[0]) != "map[containerPort:8080 name:http]" {
			t.Errorf("ports %v, want http on --listen's 8080", ports)
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			get, _, _ := unstructured.NestedMap(c, probe, "httpGet")
			if fmt.Sprint(get["port"]) != "http" {
				t.Errorf("%s %v, want it on the API's port", probe, get)
			}
		}
		if ro, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !ro {
			t.Error("the root filesystem is writable")
		}
		// The recorder parses every flag before --version: exit 0 means it
		// accepts them all.
		if msg, err := exec.Command(plugin, append(args, "--version")...).CombinedOutput(); err != nil {
			t.Errorf("kubectl-krply refuses the manifest's args %q: %v\n%s", args, err, msg)
		}
	}
	if deployments != 1 {
		t.Fatalf("%d Deployments in recorder.yaml, want 1", deployments)
	}
	// The Service reaches the API on the container's port.
	for _, u := range objs {
		if u.GetKind() == "Service" {
			ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
			if len(ports) != 1 || fmt.Sprint(ports[0]) != "map[name:http port:8080 targetPort:http]" {
				t.Errorf("Service ports %v, want http 8080 to the recorder's http", ports)
			}
			return
		}
	}
	t.Error("recorder.yaml has no Service for the query API")
}

// .dockerignore keeps out what the build does not need, and nothing it does.
func TestDockerignore(t *testing.T) {
	raw, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{{"**/*.db", "a/b/krply.db", true}, {"docs/", "docs/x.md", true}, {"docs/", "a/docs/x.md", false}, {"**/testdata/", "watch/testdata/x", true}, {"/bin/", "bin/x", true}} {
		if got := excludes(tc.pattern, tc.path); got != tc.want {
			t.Errorf("excludes(%q, %q) = %v", tc.pattern, tc.path, got)
		}
	}
	if !slices.Contains(patterns, ".git") {
		t.Error(".dockerignore lets .git in")
	}
	for _, needed := range []string{"go.mod", "go.sum", "hack/image-binaries.sh", "cmd/kubectl-krply/go.mod", "cmd/kubectl-krply/go.sum", "cmd/kubectl-krply/main.go", "storage/postgres/go.mod", "storage/postgres/store.go", "recorder/recorder.go", "server/ui/assets/index.html", "storage/sqlite/format_dictionary.json", "watch/collector.go"} {
		for _, p := range patterns {
			if excludes(p, needed) {
				t.Errorf(".dockerignore pattern %q keeps out %s, which the build needs", p, needed)
			}
		}
	}
}

// excludes reports whether a .dockerignore pattern matches path or a
// folder of it; a pattern starting with **/ matches at any depth.
func excludes(pattern, path string) bool {
	anyDepth := strings.HasPrefix(pattern, "**/")
	pattern = strings.Trim(strings.TrimPrefix(pattern, "**/"), "/")
	parts := strings.Split(path, "/")
	for i := range parts {
		if i > 0 && !anyDepth {
			break
		}
		for j := i + 1; j <= len(parts); j++ {
			if ok, _ := filepath.Match(pattern, strings.Join(parts[i:j], "/")); ok {
				return true
			}
		}
	}
	return false
}
