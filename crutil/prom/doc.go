// Package prom serves krply's metrics through the Prometheus client
// library (github.com/prometheus/client_golang): Register adds them to a
// registry (controller-runtime's, for a manager's /metrics), Handler serves
// them with the Go runtime's and the process's metrics, as the recorder of
// kubectl krply record does.
//
// The metrics are those package metrics serves without the client library,
// gathered from a metrics.Handler at each scrape: the same names, help
// texts and labels, so that dashboards and alerts work with either. The
// latency histograms are measured by metrics.Histograms and exposed as
// Prometheus histograms with the same buckets.
//
// It lives in the module github.com/krply/krply/crutil, so that the core
// module does not depend on the Prometheus client library; it does not
// import controller-runtime (package crutil does).
//
// A Collector is safe for concurrent use, as its Handler is.
package prom
