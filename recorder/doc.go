// Package recorder is the recorder as operators run it, behind `kubectl
// krply record` (cmd/kubectl-krply) and the container image: a Collector
// writing a journal, with record-everything and its exclusions, retention
// (package retention) on a schedule, Prometheus metrics (package metrics;
// on --listen behind the API's authentication, on --metrics-addr open),
// /livez, /healthz and /readyz as kube-apiserver serves them (named checks,
// /readyz/<check>, ?verbose, ?exclude=; health.go), answering from the
// first moment, before the journal opens or migrates, the query API (package server) with bearer tokens
// or the cluster's delegated authentication over HTTP or HTTPS, a
// serve-only mode over an existing journal, and the status lines it
// prints while it runs.
//
// A Config holds what the command line asks for; Run runs it until its
// context ends. The command line itself (flag names, help) is the
// plugin's: Config's fields name the plugin's flags in their comments, and
// errors name those flags. examples/record shows the library calls a
// recorder makes in a page, without this plumbing.
package recorder
