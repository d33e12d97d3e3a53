// Command docscheck fails when a relative link in a Markdown file points at
// a file or folder that does not exist, or at a heading anchor that the
// target page does not have. hack/docs-check.sh runs it on every tracked
// (and every new, not ignored) .md file of the repository:
//
//	go run ./tools/docscheck [-C dir] [file.md ...]
//
// Anchors follow GitHub's rules: a heading's text, its inline markup
// removed, lowercased, with every character that is not a letter, a digit,
// a mark, a space, '-' or '_' dropped and every space turned into '-';
// a repeated anchor gets "-1", "-2", … in order. Explicit HTML anchors
// (id="…" or name="…") count too. Links to other sites, e-mail addresses
// and anchors of non-Markdown files are not checked. Links inside code
// blocks and code spans are not links.
//
// Each broken link is printed as file:line: target: reason, and the exit
// code is 1 when there is one, 2 when the check itself cannot run.
package main
