package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// modulePath is the core module's path; the other krply modules' paths
// start with it and a slash.
const modulePath = "github.com/krply/krply"

// published are the folders of the modules a release tags, which strangers
// go get or go install; the others (tests and examples with heavy
// dependencies, tools) are only built here.
var published = []string{"", "cmd/kubectl-krply", "storage/postgres", "krplytest/crtest", "cel", "crutil"}

// defaultPlatforms are the plugin's platforms.
var defaultPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// chartDir is the Helm chart's folder.
const chartDir = "deploy/helm/krply"

type config struct {
	version, repo, dist, baseURL string
	platforms                    []string
}

type release struct {
	config
	// commit is the released commit, and when it was committed (every
	// time a release writes is this one, so that it writes the same bytes
	// when run again).
	commit string
	when   time.Time
	// files are the files of dist's top level, name to SHA-256.
	files map[string]string
}

func newRelease(c config) (*release, error) {
	if !semver.IsValid(c.version) || semver.Canonical(c.version) != c.version || semver.Build(c.version) != "" {
		return nil, fmt.Errorf("version %q is not a canonical semantic version: give vMAJOR.MINOR.PATCH, such as v0.2.0 or v0.2.0-rc.1", c.version)
	}
	for _, p := range c.platforms {
		if os, arch, ok := strings.Cut(p, "/"); !ok || os == "" || arch == "" {
			return nil, fmt.Errorf("platform %q: give os/arch, such as linux/amd64", p)
		}
	}
	if len(c.platforms) == 0 {
		return nil, errors.New("no platforms: give -platforms os/arch,...")
	}
	repo, err := filepath.Abs(c.repo)
	if err != nil {
		return nil, err
	}
	c.repo = repo
	if c.dist, err = filepath.Abs(c.dist); err != nil {
		return nil, err
	}
	if c.baseURL == "" {
		c.baseURL = "https://github.com/krply/krply/releases/download/" + c.version
	}
	return &release{config: c, files: map[string]string{}}, nil
}

func (r *release) make() error {
	if out, err := r.git("status", "--porcelain"); err != nil {
		return err
	} else if out != "" {
		return fmt.Errorf("the tree has uncommitted changes; commit or stash them first:\n%s", out)
	}
	if err := r.setRequirements(); err != nil {
		return err
	}
	commit, err := r.git("rev-parse", "HEAD")
	if err != nil {
		return err
	}
	r.commit = commit
	at, err := r.git("log", "-1", "--format=%cI", commit)
	if err != nil {
		return err
	}
	if r.when, err = time.Parse(time.RFC3339, at); err != nil {
		return err
	}
	r.when = r.when.UTC()
	if err := r.tag(); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dist, 0o755); err != nil {
		return err
	}
	proxy := filepath.Join(r.dist, "proxy")
	if err := r.writeProxy(proxy); err != nil {
		return err
	}
	if err := r.buildPlugin(proxy); err != nil {
		return err
	}
	if err := r.writeChart(); err != nil {
		return err
	}
	if err := r.writeKrewManifest(); err != nil {
		return err
	}
	if err := r.writeManifests(); err != nil {
		return err
	}
	build := fmt.Sprintf("VERSION=%s\nREVISION=%s\nCREATED=%s\n", r.version, r.commit, r.when.Format(time.RFC3339))
	if err := r.write("image-build-args", []byte(build)); err != nil {
		return err
	}
	var sums strings.Builder
	names := make([]string, 0, len(r.files))
	for name := range r.files {
		if strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&sums, "%s  %s\n", r.files[name], name)
	}
	if err := r.write("checksums.txt", []byte(sums.String())); err != nil {
		return err
	}
	fmt.Printf("release %s: commit %s, tags %s, files in %s\n", r.version, r.commit[:12], strings.Join(r.tags(), " "), r.dist)
	return nil
}

// git runs git in the repository and returns its output, trimmed.
func (r *release) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", r.repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// workReplace matches a go.work replacement of a krply module's version.
var workReplace = regexp.MustCompile(`(?m)^(\s*(?:replace\s+)?github\.com/krply/krply(?:/\S+)?)\s+v\S+\s+=>`)

// isKrply reports whether path is one of krply's modules.
func isKrply(path string) bool {
	return path == modulePath || strings.HasPrefix(path, modulePath+"/")
}

// setRequirements sets every krply requirement of every module, and the
// go.work replacements, to the version, and commits what changed.
func (r *release) setRequirements() error {
	var changed []string
	err := filepath.WalkDir(r.repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, raw, nil)
		if err != nil {
			return err
		}
		for _, req := range f.Require {
			if isKrply(req.Mod.Path) && req.Mod.Version != r.version {
				if err := f.AddRequire(req.Mod.Path, r.version); err != nil {
					return err
				}
			}
		}
		return r.rewrite(p, raw, f.Format, &changed)
	})
	if err != nil {
		return err
	}
	// go.work: the replacements of the krply modules' required version by
	// their folders follow the version.
	work := filepath.Join(r.repo, "go.work")
	raw, err := os.ReadFile(work)
	if err != nil {
		return err
	}
	if _, err := modfile.ParseWork(work, raw, nil); err != nil {
		return err
	}
	set := func() ([]byte, error) {
		return workReplace.ReplaceAll(raw, []byte("${1} "+r.version+" =>")), nil
	}
	if err := r.rewrite(work, raw, set, &changed); err != nil {
		return err
	}
	if len(changed) == 0 {
		return nil
	}
	if _, err := r.git(append([]string{"add", "--"}, changed...)...); err != nil {
		return err
	}
	_, err = r.git("commit", "-q", "-m", fmt.Sprintf("release %s: the modules require the krply modules at %s", r.version, r.version))
	return err
}

// rewrite writes the formatted file at p when it differs from raw, and
// notes it in changed.
func (r *release) rewrite(p string, raw []byte, format func() ([]byte, error), changed *[]string) error {
	out, err := format()
	if err != nil {
		return err
	}
	if bytes.Equal(out, raw) {
		return nil
	}
	rel, err := filepath.Rel(r.repo, p)
	if err != nil {
		return err
	}
	*changed = append(*changed, rel)
	return os.WriteFile(p, out, 0o644)
}

// tags are the tags of the published modules.
func (r *release) tags() []string {
	var tags []string
	for _, dir := range published {
		tags = append(tags, tagOf(dir, r.version))
	}
	return tags
}

// tagOf is the tag of the module in dir at version: Go's convention for a
// module in a subfolder.
func tagOf(dir, version string) string {
	if dir == "" {
		return version
	}
	return dir + "/" + version
}

// tag creates the published modules' tags at the commit; a tag that exists
// must name it.
func (r *release) tag() error {
	for _, t := range r.tags() {
		at, err := r.git("rev-parse", "-q", "--verify", "refs/tags/"+t+"^{commit}")
		if err == nil {
			if at != r.commit {
				return fmt.Errorf("tag %s exists at %s, not at the release's commit %s: a version is released once", t, at, r.commit)
			}
			continue
		}
		if _, err := r.git("tag", t, r.commit); err != nil {
			return err
		}
	}
	return nil
}

// writeProxy writes the published modules at the version as a file-based
// Go module proxy (GOPROXY=file://...), from their tags.
func (r *release) writeProxy(dir string) error {
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{r.version, r.when})
	if err != nil {
		return err
	}
	for _, sub := range published {
		path := modulePath
		if sub != "" {
			path += "/" + sub
		}
		esc, err := module.EscapePath(path)
		if err != nil {
			return err
		}
		v := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(v, 0o755); err != nil {
			return err
		}
		tag := tagOf(sub, r.version)
		mod, err := r.git("show", tag+":"+path2(sub, "go.mod"))
		if err != nil {
			return err
		}
		var zip bytes.Buffer
		if err := modzip.CreateFromVCS(&zip, module.Version{Path: path, Version: r.version}, r.repo, tag, sub); err != nil {
			return fmt.Errorf("zip of %s: %w", path, err)
		}
		for name, data := range map[string][]byte{
			"list":              []byte(r.version + "\n"),
			r.version + ".info": info,
			r.version + ".mod":  []byte(mod + "\n"),
			r.version + ".zip":  zip.Bytes(),
		} {
			if err := os.WriteFile(filepath.Join(v, name), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// path2 joins a module's folder and a file in it, as git show names it.
func path2(dir, file string) string {
	if dir == "" {
		return file
	}
	return path.Join(dir, file)
}

// buildPlugin builds the plugin for every platform as go install builds it
// from the proxy, and writes its archives.
func (r *release) buildPlugin(proxy string) error {
	tmp, err := os.MkdirTemp("", "krply-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	modcache, err := Modcache()
	if err != nil {
		return err
	}
	env, err := StrangerEnv(proxy, modcache)
	if err != nil {
		return err
	}
	license, err := r.git("show", tagOf("cmd/kubectl-krply", r.version)+":cmd/kubectl-krply/LICENSE")
	if err != nil {
		return err
	}
	for _, p := range r.platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		gopath := filepath.Join(tmp, "gopath")
		cmd := exec.Command("go", "install", "-trimpath", "-ldflags=-s -w", modulePath+"/cmd/kubectl-krply@"+r.version)
		cmd.Dir = tmp
		cmd.Env = append(env, "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOPATH="+gopath, "GOBIN=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go install the plugin for %s: %v\n%s", p, err, out)
		}
		bin := filepath.Join(gopath, "bin", goos+"_"+goarch, "kubectl-krply")
		if goos == runtime.GOOS && goarch == runtime.GOARCH {
			bin = filepath.Join(gopath, "bin", "kubectl-krply")
		}
		exe, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		os.Remove(bin)
		archive, err := r.tarGz([]tarFile{{"kubectl-krply", exe, 0o755}, {"LICENSE", []byte(license + "\n"), 0o644}})
		if err != nil {
			return err
		}
		if err := r.write(ArchiveName(r.version, goos, goarch), archive); err != nil {
			return err
		}
	}
	return nil
}

// ArchiveName is the name of the plugin's archive for a platform.
func ArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("kubectl-krply_%s_%s_%s.tar.gz", version, goos, goarch)
}

// StrangerEnv is the environment of a go command that resolves krply's
// modules from the release's proxy (and every other module from this
// machine's module cache, then GOPROXY), into the module cache modcache,
// outside any workspace: as a stranger's go get and go install resolve a
// published release.
func StrangerEnv(proxy, modcache string) ([]string, error) {
	goenv, err := exec.Command("go", "env", "-json", "GOMODCACHE", "GOPROXY", "GONOSUMDB", "GOFLAGS").Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	var e struct{ GOMODCACHE, GOPROXY, GONOSUMDB, GOFLAGS string }
	if err := json.Unmarshal(goenv, &e); err != nil {
		return nil, err
	}
	proxies := []string{"file://" + filepath.ToSlash(proxy)}
	if e.GOMODCACHE != "" {
		proxies = append(proxies, "file://"+filepath.ToSlash(filepath.Join(e.GOMODCACHE, "cache", "download")))
	}
	if e.GOPROXY != "" && e.GOPROXY != "off" {
		proxies = append(proxies, e.GOPROXY)
	}
	nosum := modulePath
	if e.GONOSUMDB != "" {
		nosum = e.GONOSUMDB + "," + nosum
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"GOPROXY", "GOMODCACHE", "GONOSUMDB", "GOWORK", "GOFLAGS", "GOBIN", "GOOS", "GOARCH"}, k)
	})
	godebug := "goindex=0"
	if v := os.Getenv("GODEBUG"); v != "" {
		godebug = v + "," + godebug
	}
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
	return append(env,
		// The release's modules are not in the checksum database: their
		// sums come from the proxy, as those of a private module's do.
		"GOPROXY="+strings.Join(proxies, ","), "GONOSUMDB="+nosum, "GOMODCACHE="+modcache,
		"GOWORK=off", "GOFLAGS="+strings.TrimSpace(e.GOFLAGS+" -modcacherw"),
		// The go command's index of a module in the module cache holds
		// for the module's version as long as the cache: a version that
		// Modcache removed and the proxy serves again with other contents
		// (the install test's, from one commit to the next) would be
		// built from the stale index, without the packages it gained.
		"GODEBUG="+godebug), nil
}

// Modcache returns the module cache of the release's go commands, with
// krply's modules removed from it: a folder of its own in the user's cache
// (KRPLY_RELEASE_MODCACHE names another), so that the other modules stay
// extracted, and built, from one release to the next at the same paths,
// while krply's modules are always those of the release's proxy (a version
// released again, as the install test's is, has other contents). Two
// releases must not run at once.
func Modcache() (string, error) {
	dir := os.Getenv("KRPLY_RELEASE_MODCACHE")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for the release's module cache (set KRPLY_RELEASE_MODCACHE): %w", err)
		}
		dir = filepath.Join(cache, "krply", "release-modcache")
	}
	for _, krply := range []string{filepath.Join(dir, "github.com", "krply"), filepath.Join(dir, "cache", "download", "github.com", "krply")} {
		if err := os.RemoveAll(krply); err != nil {
			return "", fmt.Errorf("remove krply's modules from the release's module cache: %w", err)
		}
	}
	return dir, nil
}

type tarFile struct {
	name string
	data []byte
	mode int64
}

// tarGz is a gzipped tar of files, in the given order, dated at the
// release's commit, so that it is the same bytes each time.
func (r *release) tarGz(files []tarFile) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: r.when, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write writes a file of dist's top level and notes its checksum.
func (r *release) write(name string, data []byte) error {
	sum := sha256.Sum256(data)
	r.files[name] = hex.EncodeToString(sum[:])
	return os.WriteFile(filepath.Join(r.dist, name), data, 0o644)
}

var (
	chartVersionLine    = regexp.MustCompile(`(?m)^version:.*$`)
	chartAppVersionLine = regexp.MustCompile(`(?m)^appVersion:.*$`)
)

// ChartName is the packaged chart's file name.
func ChartName(version string) string {
	return fmt.Sprintf("krply-%s.tgz", strings.TrimPrefix(version, "v"))
}

// writeChart packages the Helm chart, its version and appVersion the
// release's, as helm package lays it out, and writes its index.yaml.
func (r *release) writeChart() error {
	var files []tarFile
	root := filepath.Join(r.repo, chartDir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "Chart.yaml" {
			data = chartVersionLine.ReplaceAll(data, []byte("version: "+strings.TrimPrefix(r.version, "v")))
			data = chartAppVersionLine.ReplaceAll(data, []byte(fmt.Sprintf("appVersion: %q", r.version)))
		}
		files = append(files, tarFile{path.Join("krply", filepath.ToSlash(rel)), data, 0o644})
		return nil
	})
	if err != nil {
		return err
	}
	// Chart.yaml first, as helm package writes it.
	slices.SortStableFunc(files, func(a, b tarFile) int {
		if (a.name == "krply/Chart.yaml") != (b.name == "krply/Chart.yaml") {
			if a.name == "krply/Chart.yaml" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	archive, err := r.tarGz(files)
	if err != nil {
		return err
	}
	name := ChartName(r.version)
	if err := r.write(name, archive); err != nil {
		return err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return fmt.Errorf("the packaged chart does not load: %w", err)
	}
	index := repo.NewIndexFile()
	if err := index.MustAdd(ch.Metadata, name, r.baseURL, r.files[name]); err != nil {
		return err
	}
	index.Generated = r.when
	for _, versions := range index.Entries {
		for _, v := range versions {
			v.Created = r.when
		}
	}
	out, err := yaml.Marshal(index)
	if err != nil {
		return err
	}
	return r.write("index.yaml", out)
}

// krewPlugin is the krew manifest (krew.googlecontainertools.github.com/
// v1alpha2 Plugin) of the fields a release fills.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Caveats          string         `json:"caveats,omitempty"`
		Platforms        []krewPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Bin    string     `json:"bin"`
	Files  []krewFile `json:"files"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// writeKrewManifest writes krply.yaml, the plugin's krew manifest for the
// archives.
func (r *release) writeKrewManifest() error {
	var p krewPlugin
	p.APIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	p.Kind = "Plugin"
	p.Metadata.Name = "krply"
	p.Spec.Version = r.version
	p.Spec.Homepage = "https://github.com/krply/krply"
	p.Spec.ShortDescription = "Gap-aware history of objects: get, history, diff, replay"
	p.Spec.Description = `krply records a gap-aware history of Kubernetes objects into a journal
(SQLite or PostgreSQL) and answers from it: an object at any time, its
history with who changed what, namespace snapshots and diffs, and safe
replays into a sandbox. Every answer says how complete it is.
`
	for _, pl := range r.platforms {
		goos, goarch, _ := strings.Cut(pl, "/")
		name := ArchiveName(r.version, goos, goarch)
		var k krewPlatform
		k.Selector.MatchLabels = map[string]string{"os": goos, "arch": goarch}
		k.URI = r.baseURL + "/" + name
		k.SHA256 = r.files[name]
		k.Bin = "kubectl-krply"
		k.Files = []krewFile{{From: "kubectl-krply", To: "."}, {From: "LICENSE", To: "."}}
		p.Spec.Platforms = append(p.Spec.Platforms, k)
	}
	out, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	return r.write("krply.yaml", out)
}

// devImage is the image the plain manifests under deploy/ run, built from
// the working tree.
var devImage = regexp.MustCompile(`(?m)^(\s*image:\s*)krply:dev\b.*$`)

// ManifestsName is the file of the plain manifests of a release.
const ManifestsName = "krply-recorder.yaml"

// writeManifests writes the recorder's plain manifests (deploy/recorder)
// as one file that runs the release's image.
func (r *release) writeManifests() error {
	var out bytes.Buffer
	for _, f := range []string{"deploy/recorder/rbac.yaml", "deploy/recorder/recorder.yaml"} {
		data, err := os.ReadFile(filepath.Join(r.repo, f))
		if err != nil {
			return err
		}
		if out.Len() > 0 {
			out.WriteString("---\n")
		}
		out.Write(devImage.ReplaceAll(data, []byte("${1}krply:"+r.version)))
	}
	if !bytes.Contains(out.Bytes(), []byte("image: krply:"+r.version)) {
		return errors.New("deploy/recorder/recorder.yaml names no image krply:dev to set to the release's")
	}
	return r.write(ManifestsName, out.Bytes())
}
