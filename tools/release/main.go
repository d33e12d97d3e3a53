// Command release makes a krply release: `make release VERSION=vX.Y.Z`
// (hack/release.sh) runs it at the repository's root. See doc.go.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if err := runRelease(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func runRelease(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.version, "version", "", "the version to release, vX.Y.Z (VERSION= of make release)")
	fs.StringVar(&c.repo, "repo", ".", "the repository's root")
	fs.StringVar(&c.dist, "dist", "dist", "the folder the release's files are written to (DIST= of make release)")
	platforms := fs.String("platforms", strings.Join(defaultPlatforms, ","), "the plugin's platforms, os/arch comma-separated")
	fs.StringVar(&c.baseURL, "base-url", "", "where the release's files are downloaded from (default: the GitHub release of the version)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: give the version with -version (make release VERSION=vX.Y.Z)", fs.Args())
	}
	if c.version == "" {
		return errors.New("no version: make release VERSION=vX.Y.Z")
	}
	for _, p := range strings.Split(*platforms, ",") {
		if p = strings.TrimSpace(p); p != "" {
			c.platforms = append(c.platforms, p)
		}
	}
	r, err := newRelease(c)
	if err != nil {
		return err
	}
	return r.make()
}
