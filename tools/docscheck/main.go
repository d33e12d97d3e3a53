package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docscheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "the repository's root `directory`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = markdownFiles(*dir); err != nil {
			fmt.Fprintln(stderr, "docscheck:", err)
			return 2
		}
	}
	c := checker{root: *dir, anchors: map[string]map[string]bool{}}
	var broken []string
	for _, f := range files {
		b, err := c.check(f)
		if err != nil {
			fmt.Fprintln(stderr, "docscheck:", err)
			return 2
		}
		broken = append(broken, b...)
	}
	for _, b := range broken {
		fmt.Fprintln(stdout, b)
	}
	if len(broken) > 0 {
		fmt.Fprintf(stderr, "docscheck: %d broken links in %d Markdown files\n", len(broken), len(files))
		return 1
	}
	return 0
}

// markdownFiles lists the .md files git tracks, and the new ones it does
// not ignore, relative to root.
func markdownFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err == nil { // deleted but not yet staged
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // by path relative to root
}

// A link is a link's target and the line it is on.
type link struct {
	target string
	line   int
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional title, and <target> in angle brackets.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDef matches a reference definition: [label]: target
	refDef = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	fence  = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	atx    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	htmlID = regexp.MustCompile(`(?i)<[a-z][^>]*\s(?:id|name)\s*=\s*["']([^"']+)["']`)
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// lines returns the file's lines with fenced code blocks blanked, so that
// line numbers stay right.
func lines(data []byte) []string {
	var out []string
	var open string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		if m := fence.FindStringSubmatch(l); m != nil {
			switch {
			case open == "":
				open = m[1]
				out = append(out, "")
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(l[strings.Index(l, m[1])+len(m[1]):]) == "":
				open = ""
				out = append(out, "")
				continue
			}
		}
		if open != "" {
			l = ""
		}
		out = append(out, l)
	}
	return out
}

// withoutCodeSpans removes the code spans of a line: a run of backticks
// up to the next run of as many.
func withoutCodeSpans(l string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(l, '`')
		if i < 0 {
			return b.String() + l
		}
		b.WriteString(l[:i])
		n := len(l[i:]) - len(strings.TrimLeft(l[i:], "`"))
		run, rest := l[i:i+n], l[i+n:]
		end := -1
		for j := 0; j < len(rest); {
			k := strings.Index(rest[j:], run)
			if k < 0 {
				break
			}
			k += j
			m := len(rest[k:]) - len(strings.TrimLeft(rest[k:], "`"))
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 { // no closing run: literal backticks
			b.WriteString(run)
			l = rest
			continue
		}
		l = rest[end+n:]
	}
}

func (c *checker) check(file string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(c.root, file))
	if err != nil {
		return nil, err
	}
	var links []link
	for i, l := range lines(data) {
		if m := refDef.FindStringSubmatch(l); m != nil {
			links = append(links, link{strings.Trim(m[1], "<>"), i + 1})
			continue
		}
		l = withoutCodeSpans(l)
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			links = append(links, link{strings.Trim(m[1], "<>"), i + 1})
		}
	}
	var broken []string
	for _, lk := range links {
		if reason := c.resolve(file, lk.target); reason != "" {
			broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", file, lk.line, lk.target, reason))
		}
	}
	return broken, nil
}

// resolve returns why target, linked from file, is broken, or "".
func (c *checker) resolve(file, target string) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return "" // another site, mailto:, …
	}
	path, anchor, _ := strings.Cut(target, "#")
	path, _, _ = strings.Cut(path, "?")
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	if a, err := url.PathUnescape(anchor); err == nil {
		anchor = a
	}
	var rel string
	switch {
	case path == "":
		rel = file
	case strings.HasPrefix(path, "/"):
		rel = filepath.Clean(strings.TrimPrefix(path, "/"))
	default:
		rel = filepath.Join(filepath.Dir(file), path)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "outside the repository"
	}
	st, err := os.Stat(filepath.Join(c.root, rel))
	if err != nil {
		return "no such file or folder"
	}
	if anchor == "" || st.IsDir() || !strings.EqualFold(filepath.Ext(rel), ".md") {
		return ""
	}
	anchors, err := c.anchorsOf(rel)
	if err != nil {
		return err.Error()
	}
	if !anchors[strings.ToLower(anchor)] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", rel, anchor)
	}
	return ""
}

func (c *checker) anchorsOf(rel string) (map[string]bool, error) {
	if a, ok := c.anchors[rel]; ok {
		return a, nil
	}
	data, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		return nil, err
	}
	a := Anchors(data)
	c.anchors[rel] = a
	return a, nil
}

// Anchors returns the anchors GitHub gives the headings of a Markdown
// document, and its explicit HTML anchors.
func Anchors(data []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	ls := lines(data)
	for i, l := range ls {
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			out[strings.ToLower(m[1])] = true
		}
		var text string
		switch m := atx.FindStringSubmatch(l); {
		case m != nil && !strings.HasPrefix(strings.TrimLeft(l, " "), "#!"):
			text = m[2]
		case i > 0 && isSetextUnderline(l) && setextText(ls, i):
			text = strings.TrimSpace(ls[i-1])
		default:
			continue
		}
		slug := Slug(text)
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug = fmt.Sprintf("%s-%d", slug, n+1)
		} else {
			seen[slug] = 0
		}
		out[slug] = true
	}
	return out
}

func isSetextUnderline(l string) bool {
	t := strings.TrimSpace(l)
	if t == "" || len(l)-len(strings.TrimLeft(l, " ")) > 3 {
		return false
	}
	return strings.Trim(t, "=") == "" || strings.Trim(t, "-") == ""
}

// setextText reports whether the line before i is a paragraph's text that
// the underline at i turns into a heading.
func setextText(ls []string, i int) bool {
	prev := strings.TrimSpace(ls[i-1])
	if prev == "" || strings.HasPrefix(prev, "|") || strings.HasPrefix(prev, "#") || strings.HasPrefix(prev, ">") ||
		strings.HasPrefix(prev, "- ") || strings.HasPrefix(prev, "* ") || isSetextUnderline(ls[i-1]) {
		return false
	}
	return true
}

var (
	mdImage   = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink    = regexp.MustCompile(`\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])`)
	htmlTag   = regexp.MustCompile(`<[^>]+>`)
	emphasis  = regexp.MustCompile(`(\*+|\b_+|_+\b)`)
	entityRef = regexp.MustCompile(`&[a-zA-Z0-9#]+;`)
)

// Slug is GitHub's anchor of a heading's text: its rendered text
// lowercased, without punctuation, spaces turned into hyphens.
func Slug(text string) string {
	text = mdImage.ReplaceAllString(text, "$1")
	text = mdLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = strings.ReplaceAll(text, "`", "")
	text = entityRef.ReplaceAllString(text, "")
	text = emphasis.ReplaceAllString(text, "") // an underscore inside a word stays
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
