package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// testVersion is the version the install test releases: never tagged in
// the working repository, only in a temporary clone.
const testVersion = "v0.0.1-installtest"

// strangerProgram is a program of someone who go gets the core module, the
// PostgreSQL store and the controller-runtime helpers: it records from
// krplytest's fake cluster and asks the history.
const strangerProgram = `package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/crtest"
	"github.com/krply/krply/storage/postgres"
)

// t is the TestingT of a program: a failure ends it.
type t struct{ cleanups []func() }

func (*t) Helper()                          {}
func (c *t) Cleanup(f func())               { c.cleanups = append(c.cleanups, f) }
func (*t) Errorf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...); os.Exit(1) }
func (*t) Fatalf(format string, a ...any)   { fmt.Fprintf(os.Stderr, format+"\n", a...); os.Exit(1) }

func main() {
	tt := &t{}
	c := krplytest.NewCluster(tt, krplytest.WithObjects(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "settings"},
		"data":     map[string]any{"color": "blue"},
	}}))
	c.Modify("configmaps", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
	})
	h := c.History("configmaps", "shop", "settings")
	fmt.Printf("versions %d\n", len(h.Versions()))
	fmt.Printf("krply %s\n", krply.Version())
	// The other modules link: the PostgreSQL store and crtest.
	fmt.Printf("postgres %T crtest %T\n", postgres.Open, crtest.New)
	for i := len(tt.cleanups) - 1; i >= 0; i-- {
		tt.cleanups[i]()
	}
}
`

// TestInstall releases the repository's HEAD for a test version in a
// temporary clone, then installs the result as a stranger would, with no
// access to the repository: go install of the plugin, go get of the
// modules into a new program that builds and runs, the krew manifest
// through krew's own validation and install, the chart from its archive.
func TestInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("the install test builds the plugin for every platform; it runs in make test")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "repo")
	run(t, "", nil, "git", "clone", "-q", "--no-local", strings.TrimSpace(string(root)), clone)
	if dirty := run(t, strings.TrimSpace(string(root)), nil, "git", "status", "--porcelain"); dirty != "" {
		t.Logf("the working tree has uncommitted changes; the test releases its HEAD, without them:\n%s", dirty)
	}
	gitEnv := []string{"GIT_AUTHOR_NAME=krply release test", "GIT_AUTHOR_EMAIL=release-test@krply.invalid",
		"GIT_COMMITTER_NAME=krply release test", "GIT_COMMITTER_EMAIL=release-test@krply.invalid"}
	for _, kv := range gitEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	dist := filepath.Join(tmp, "dist")
	release := func() {
		t.Helper()
		if err := runRelease([]string{"-version", testVersion, "-repo", clone, "-dist", dist}); err != nil {
			t.Fatalf("release %s: %v", testVersion, err)
		}
	}
	release()
	head := run(t, clone, nil, "git", "rev-parse", "HEAD")
	tags := run(t, clone, nil, "git", "tag", "--points-at", "HEAD")
	for _, want := range []string{testVersion, "cmd/kubectl-krply/" + testVersion, "storage/postgres/" + testVersion, "krplytest/crtest/" + testVersion, "cel/" + testVersion, "crutil/" + testVersion} {
		if !strings.Contains("\n"+tags+"\n", "\n"+want+"\n") {
			t.Errorf("tag %s missing at HEAD; tags there:\n%s", want, tags)
		}
	}
	for _, f := range []string{"cmd/kubectl-krply/go.mod", "storage/postgres/go.mod", "krplytest/crtest/go.mod", "cel/go.mod", "crutil/go.mod"} {
		if mod := run(t, clone, nil, "git", "show", "HEAD:"+f); !strings.Contains(mod, "github.com/krply/krply "+testVersion) {
			t.Errorf("%s does not require the core module at %s:\n%s", f, testVersion, mod)
		}
	}
	first := sums(t, dist)
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gets, installs, err := installLines(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, want := range []string{modulePath, modulePath + "/storage/postgres", modulePath + "/krplytest/crtest"} {
		if !slices.Contains(gets, want) {
			t.Errorf("README.md's Install lines do not go get %s: %q", want, gets)
		}
	}
	if !slices.Equal(installs, []string{modulePath + "/cmd/kubectl-krply"}) {
		t.Errorf("README.md's Install lines go install %q, want the plugin", installs)
	}

	// Run twice, it changes nothing.
	release()
	if h := run(t, clone, nil, "git", "rev-parse", "HEAD"); h != head {
		t.Errorf("the second release moved HEAD from %s to %s", head, h)
	}
	if again := run(t, clone, nil, "git", "tag", "--points-at", "HEAD"); again != tags {
		t.Errorf("the second release changed the tags:\n%s\nwant\n%s", again, tags)
	}
	if second := sums(t, dist); !equalMaps(first, second) {
		t.Errorf("the second release wrote other bytes:\nfirst  %v\nsecond %v", first, second)
	}
	if err := os.RemoveAll(clone); err != nil {
		t.Fatal(err)
	}

	modcache, err := Modcache()
	if err != nil {
		t.Fatal(err)
	}
	env, err := StrangerEnv(filepath.Join(dist, "proxy"), modcache)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("go install", func(t *testing.T) {
		bin := filepath.Join(tmp, "bin")
		home := t.TempDir()
		for _, pkg := range installs {
			run(t, home, append(env, "GOBIN="+bin), "go", "install", pkg+"@"+testVersion)
		}
		if out := run(t, home, nil, filepath.Join(bin, "kubectl-krply"), "version"); !strings.Contains(out, testVersion) {
			t.Errorf("kubectl-krply version says %q, want %s in it", out, testVersion)
		}
	})

	t.Run("go get", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, env, "go", "mod", "init", "example.com/stranger")
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(strangerProgram), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, mod := range gets {
			run(t, dir, env, "go", "get", mod+"@"+testVersion)
		}
		run(t, dir, env, "go", "mod", "tidy")
		run(t, dir, env, "go", "build", "-o", "stranger", ".")
		out := run(t, dir, nil, filepath.Join(dir, "stranger"))
		for _, want := range []string{"versions 2", "krply " + testVersion, "postgres func("} {
			if !strings.Contains(out, want) {
				t.Errorf("the program printed %q, want %q in it", out, want)
			}
		}
	})

	t.Run("krew", func(t *testing.T) {
		manifest := filepath.Join(dist, "krply.yaml")
		raw, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		var p krewPlugin
		if err := yaml.UnmarshalStrict(raw, &p); err != nil {
			t.Fatalf("krply.yaml: %v", err)
		}
		if len(p.Spec.Platforms) != len(defaultPlatforms) {
			t.Errorf("%d platforms, want %d", len(p.Spec.Platforms), len(defaultPlatforms))
		}
		for _, pl := range p.Spec.Platforms {
			name := ArchiveName(testVersion, pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"])
			if sum := sumOf(t, filepath.Join(dist, name)); pl.SHA256 != sum {
				t.Errorf("%s: sha256 %s in the manifest, %s of the archive", name, pl.SHA256, sum)
			}
			if !strings.HasSuffix(pl.URI, "/"+testVersion+"/"+name) {
				t.Errorf("uri %s does not name %s of %s", pl.URI, name, testVersion)
			}
		}
		krew := filepath.Join(tmp, "krewtools")
		// krew's own tools, from their module (tools/krew), outside the workspace.
		for _, tool := range []string{"sigs.k8s.io/krew/cmd/validate-krew-manifest", "sigs.k8s.io/krew/cmd/krew"} {
			run(t, "../krew", []string{"GOWORK=off", "GOBIN=" + krew}, "go", "install", tool)
		}
		run(t, tmp, nil, filepath.Join(krew, "validate-krew-manifest"), "-manifest", manifest, "-skip-install")
		// An install of this platform's archive, as krew installs it, then the plugin it installed.
		krewRoot := t.TempDir()
		archive := filepath.Join(dist, ArchiveName(testVersion, runtime.GOOS, runtime.GOARCH))
		run(t, tmp, []string{"KREW_ROOT=" + krewRoot}, filepath.Join(krew, "krew"), "install", "--manifest="+manifest, "--archive="+archive)
		if out := run(t, tmp, nil, filepath.Join(krewRoot, "bin", "kubectl-krply"), "version"); !strings.Contains(out, testVersion) {
			t.Errorf("the plugin krew installed says %q, want %s in it", out, testVersion)
		}
	})

	t.Run("manifests", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(dist, ManifestsName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "image: krply:"+testVersion) || strings.Contains(string(raw), "krply:dev") {
			t.Errorf("%s does not run the release's image krply:%s alone", ManifestsName, testVersion)
		}
		if !strings.Contains(string(raw), "kind: ClusterRole") || !strings.Contains(string(raw), "kind: Deployment") {
			t.Errorf("%s lacks the RBAC or the Deployment", ManifestsName)
		}
	})

	t.Run("helm", func(t *testing.T) {
		archive := filepath.Join(dist, ChartName(testVersion))
		ch, err := loader.Load(archive)
		if err != nil {
			t.Fatalf("load %s: %v", archive, err)
		}
		if ch.Metadata.Version != strings.TrimPrefix(testVersion, "v") || ch.Metadata.AppVersion != testVersion {
			t.Errorf("chart version %q appVersion %q, want %q and %q", ch.Metadata.Version, ch.Metadata.AppVersion, strings.TrimPrefix(testVersion, "v"), testVersion)
		}
		lint := action.NewLint()
		lint.Strict = true
		if res := lint.Run([]string{archive}, map[string]any{}); len(res.Errors) > 0 {
			t.Errorf("helm lint %s: %v", archive, res.Errors)
		}
		install := action.NewInstall(&action.Configuration{})
		install.DryRun, install.ClientOnly, install.ReleaseName, install.Namespace = true, true, "krply", "krply"
		install.KubeVersion = &chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
		rel, err := install.Run(ch, map[string]any{})
		if err != nil {
			t.Fatalf("render %s: %v", archive, err)
		}
		if !strings.Contains(rel.Manifest, "image: krply:"+testVersion) && !strings.Contains(rel.Manifest, `image: "krply:`+testVersion+`"`) {
			t.Errorf("the rendered chart does not run the release's image krply:%s", testVersion)
		}
		index, err := repo.LoadIndexFile(filepath.Join(dist, "index.yaml"))
		if err != nil {
			t.Fatalf("index.yaml: %v", err)
		}
		v, err := index.Get("krply", strings.TrimPrefix(testVersion, "v"))
		if err != nil {
			t.Fatalf("index.yaml: %v", err)
		}
		if sum := sumOf(t, archive); v.Digest != sum || len(v.URLs) != 1 || !strings.HasSuffix(v.URLs[0], "/"+ChartName(testVersion)) {
			t.Errorf("index entry digest %s urls %v, want %s and the archive's URL", v.Digest, v.URLs, sum)
		}
	})
}

// installLines reads the README's Install section: the paths its go get
// and go install lines name at @latest, in order.
func installLines(readme string) (gets, installs []string, err error) {
	_, section, ok := strings.Cut(readme, "\n## Install\n")
	if !ok {
		return nil, nil, fmt.Errorf("no Install section")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		return nil, nil, fmt.Errorf("no sh block in the Install section")
	}
	block, _, _ = strings.Cut(block, "```")
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 || f[0] != "go" || (f[1] != "get" && f[1] != "install") || !strings.HasSuffix(f[2], "@latest") {
			return nil, nil, fmt.Errorf("install line %q is not go get|install PATH@latest", strings.TrimSpace(line))
		}
		path := strings.TrimSuffix(f[2], "@latest")
		if f[1] == "get" {
			gets = append(gets, path)
		} else {
			installs = append(installs, path)
		}
	}
	return gets, installs, nil
}

// run runs a command in dir with env added to this process's, failing the
// test with its output if it fails, and returns its output, trimmed.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// sums are the SHA-256 of dist's files, proxy included.
func sums(t *testing.T, dist string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.Walk(dist, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dist, p)
		m[rel] = sumOf(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sumOf(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
