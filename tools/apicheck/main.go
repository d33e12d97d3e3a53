package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", ".", "the module's root `directory`")
	record := fs.String("record", "api/krply.txt", "the record's `path`, relative to the module root")
	write := fs.Bool("w", false, "write the record instead of checking it")
	overlay := fs.String("overlay", "", "a go build -overlay `file` (tests add files with it)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: apicheck [-C dir] [-record file] [-w] [-overlay file]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "apicheck: unexpected arguments %q\n", fs.Args())
		return 2
	}
	mod, err := load(*dir, *overlay)
	if err != nil {
		fmt.Fprintln(stderr, "apicheck:", err)
		return 2
	}
	lines := mod.apiLines()
	if *write {
		if err := writeRecord(*dir, *record, lines); err != nil {
			fmt.Fprintln(stderr, "apicheck:", err)
			return 2
		}
		fmt.Fprintf(stdout, "apicheck: wrote %d lines of API of %d packages to %s\n", len(lines), len(mod.pkgs), *record)
		return 0
	}

	status := 0
	want, err := readRecord(*dir, *record)
	if err != nil {
		fmt.Fprintf(stderr, "apicheck: %v\nCreate it with: make api\n", err)
		status = 1
	} else if d := diff(want, lines); len(d) > 0 {
		fmt.Fprintf(stderr, "apicheck: the exported API differs from %s (- only in the record, + only in the code):\n", *record)
		for _, l := range d {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintf(stderr, "If the change is deliberate, update the record in the same commit: make api (go run ./tools/apicheck -w)\n")
		status = 1
	}

	unused, err := mod.unexercisedOptions()
	if err != nil {
		fmt.Fprintln(stderr, "apicheck:", err)
		return 2
	}
	if len(unused) > 0 {
		fmt.Fprintln(stderr, "apicheck: option constructors that no _test.go file and no example references:")
		for _, u := range unused {
			fmt.Fprintln(stderr, "\t"+u)
		}
		fmt.Fprintln(stderr, "Every public option is exercised by a test that asserts its effect: add one (options_exercised_test.go in its package).")
		status = 1
	}
	if status == 0 {
		fmt.Fprintf(stdout, "apicheck: the API of %d packages matches %s; every option is exercised\n", len(mod.pkgs), *record)
	}
	return status
}
