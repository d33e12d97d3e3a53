// Package metrics serves krply's metrics in the Prometheus text exposition
// format (version 0.0.4) without the Prometheus client library: a scrape
// reads the Collector's Status, the retention Keeper's Status and the
// journal's Stats, and writes them. Mount NewHandler at /metrics.
//
// Per-stream metrics carry the labels source_cluster (the recorded
// cluster's ID; not "cluster", which many Prometheus set-ups add to every
// target), group, version, resource and namespace ("" for the core group, and for a cluster-scoped resource
// or one recorded across all namespaces), so that a query can select and
// aggregate by each:
//
//	krply_stream_events_total             object-change records made durable since start (counter)
//	krply_stream_bytes_total              object body bytes made durable since start (counter)
//	krply_stream_baselines_total          complete baselines taken since start (counter)
//	krply_stream_relists_total            of them, relists over an earlier history (counter)
//	krply_stream_gaps                     gap records of the stream in the journal (gauge; compaction removes old ones)
//	krply_stream_covered                  1 while the journal is continuous for the stream
//	krply_stream_recording                1 while the stream is synced and watching (what readiness requires)
//	krply_stream_last_record_timestamp_seconds  when the stream's durable evidence was last observed: alert on staleness with time() - this
//	krply_stream_lag_seconds              seconds since then, at the scrape
//
// Collector-wide, journal and retention metrics:
//
//	krply_synced                          1 while every stream records (Collector.Synced)
//	krply_journal_file_bytes              size of the journal's files
//	krply_journal_used_bytes              what its data takes (storage.Stats.UsedBytes), which retention by size bounds
//	krply_journal_records                 records in the journal
//	krply_retention_runs_total, krply_retention_compactions_total, krply_retention_failures_total
//	krply_retention_records_removed_total records compaction removed
//	krply_retention_cut_timestamp_seconds where the history kept begins (0 before the first compaction)
//	krply_retention_pressure              1 while the journal is over its size with nothing left to cut, or the disk is short
//	krply_disk_free_bytes                 space left on the journal's file system (when a reserve is set)
//	krply_build_info                      1, labelled with krply's version and Go's
//
// Latency histograms, measured where the work happens by Histograms (give
// one to the Collector with watch.WithMetrics, to the query API with
// server.WithRequestMetrics, and to the Handler with WithHistograms):
//
//	krply_append_duration_seconds         each append of a batch of records, until durable
//	krply_relist_duration_seconds         each complete baseline (initial list or relist)
//	krply_api_request_duration_seconds    each request of /api/v1 by method and route (not the change feed)
//
// Gather returns the same families for a Prometheus client library:
// package github.com/krply/krply/crutil/prom (its own module) registers
// them with a prometheus.Registerer, with the same names and labels.
//
// A Handler and Histograms are safe for concurrent use.
package metrics
