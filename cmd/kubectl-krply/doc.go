// Command kubectl-krply is krply's command-line tool, a kubectl plugin:
// with the binary on the PATH, `kubectl krply` answers "what changed,
// when, by whom" and "put it back in a sandbox" from a krply journal.
//
//	go install github.com/krply/krply/cmd/kubectl-krply@latest
//	kubectl krply record --resource deploy,cm,svc -n shop
//	kubectl krply history deploy/web -n shop
//
// Commands: record (the recorder operators run: record-everything,
// retention, metrics, the query API; package recorder), status,
// gaps, get, history, blame, diff, snapshot, replay plan / dry-run /
// apply, audit ingest, export, import, migrate, mcp, version, completion. They take kubectl's flags (--kubeconfig,
// --context, -n, -A, -l on record) through k8s.io/cli-runtime, its printers
// (-o json|yaml|name|jsonpath=|go-template=, besides table and wide), and
// TYPE/NAME arguments with the short names the recorder accepts
// (watch.Alias).
//
// Answers come from a journal file (--journal, default $KRPLY_JOURNAL,
// then ./krply.db), opened read-only unless the command saves something,
// or a PostgreSQL journal (--journal postgres://…; storage/postgres, which
// this module brings and the core module does not),
// or from a recorder's query API (--server URL with --token or
// --token-file, and kubectl's --request-timeout, --certificate-authority,
// --insecure-skip-tls-verify and --disable-compression for that
// connection).
// Every command is written over one interface, source, that
// both implement (journalSource, serverSource), so the output is the same
// either way; TestServerSameAsJournal holds them to it.
//
// The Model Context Protocol server (mcp*.go, with the official Go SDK,
// github.com/modelcontextprotocol/go-sdk, which this module brings and the
// core does not) answers AI assistants over the same interface: kubectl
// krply mcp over stdio, and a recorder's --listen over Streamable HTTP at
// /mcp, where each tool call asks the query API in process with the
// caller's own credentials (so it is authorized exactly as that question
// to the API). Its tools are a registry (mcpTools): a new tool is one
// entry with its input and output types and a function from one to the
// other; addTool puts the answer's coverage in its structured output and
// in its text's first line. testdata/mcp-tools.json pins their schemas.
//
// Exit codes: 0 ok, 1 an error (an object not found included), 2 a wrong
// command line, 3 an incomplete answer under --require-complete (without
// it, incompleteness is a warning on stderr). Messages name flags, never
// Go fields. Times print in RFC 3339 with the zone and full precision, so a
// printed time pasted back into --at names the same instant.
//
// The plugin is its own module (nested in the repository) so that cobra
// and cli-runtime stay out of the core module that programs embed.
package main
