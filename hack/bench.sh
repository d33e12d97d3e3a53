#!/usr/bin/env bash
# Runs the benchmark set of docs/performance.md in one go, prints its table
# (markdown), each figure with the machine's load average (uptime) when its
# benchmark ran, and rewrites the table in docs/performance.md (between its
# "<!-- make bench" and "<!-- end of make bench -->" lines) with it. Ratios are measured in the same run
# against a baseline in the same process (krply/raw, relist/list), so they
# hold on a loaded machine better than the absolute times do.
#
#   make bench                              # everything, the 150k relist too
#   BENCH_RELIST_150K=0 make bench          # without the 150k relist (minutes)
#   KRPLY_BENCH_DIR=dir make bench          # keep the 1M-event journals in dir
#
# The raw `go test` output goes to BENCH_LOG (default: a temporary file).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}
log=${BENCH_LOG:-$(mktemp -t krply-bench.XXXXXX)}
: >"$log"
assets=$(hack/testbin.sh | tail -n 1)
export KUBEBUILDER_ASSETS="$assets" KRPLY_REQUIRE_TESTENV=1
if [[ "${BENCH_RELIST_150K:-1}" == 1 ]]; then
  export KRPLY_BENCH_RELIST_150K=1
fi

load() { awk '{print $1}' /proc/loadavg 2>/dev/null || uptime | sed 's/.*load average[s]*: *//; s/,.*//'; }

# run NAME ARGS... runs go test with ARGS, appending its output to the log
# with the load average before and after as "load NAME before after"; in
# the folder dir when it is set (a nested module: with GOWORK set to the
# workspace).
run() {
  local name=$1
  shift
  local before after
  before=$(load)
  echo "bench: $name (load $before)" >&2
  "$GO" test ${dir:+-C "$dir"} -count=1 -run '^$' "$@" 2>&1 | tee -a "$log" >&2
  after=$(load)
  echo "load $name $before $after" >>"$log"
}

run storage -bench 'Append|ChurnBytes|EventsBytes' -benchtime 20000x ./storage/sqlite
run latest -bench 'LatestAt' -timeout 30m ./storage/sqlite
run relist -bench 'RelistVersusList' -benchtime 10x -timeout 60m ./watch/
run snapshot20k -bench 'Snapshot20k' -benchtime 5x ./examples/snapshot/
run objectat -bench 'ObjectAt/sqlite' -benchtime 2000x -timeout 30m ./materialize
run materialize -bench '(Snapshot|Diff|Find)/sqlite' -benchtime 3x -timeout 30m ./materialize
run why -bench 'BenchmarkWhy' -benchtime 20x -timeout 30m ./why/
run transfer -bench 'Transfer' -benchtime 1x -timeout 60m ./storage/transfer/
run queryapi -bench 'QueryAPI|SnapshotPages' -benchtime 1x -timeout 30m ./server/
# The recorder in a process of its own, the queries' process at a lower
# priority: what the recorder's lag is when the queries do not take its
# CPU.
KRPLY_BENCH_RECORDER=process KRPLY_BENCH_NICE=10 KRPLY_BENCH_CLIENTS=32 KRPLY_BENCH_SECONDS=15 \
  run queryapiproc -bench 'QueryAPI$' -benchtime 1x -timeout 30m ./server/
# Find with CEL, over a journal of its own (built once, kept in the
# temporary folder).
dir=cel GOWORK="$root/go.work" run celfind -bench 'BenchmarkFind' -benchtime 3x -timeout 30m .
# Last: it copies the 1,000,000-event journal, whose writing back would
# disturb the latency of the steps after it.
run index -bench 'VersionIndexBuild' -benchtime 1x -timeout 30m ./storage/sqlite

echo "raw output: $log" >&2
table=$(awk -f - "$log" <<'AWK'
# metric(bench, unit) is the value before unit on the first line of bench.
function metric(bench, unit,    i) {
  if (!(bench in line)) return ""
  n = split(line[bench], f, /[ \t]+/)
  for (i = 2; i <= n; i++) if (f[i] == unit) return f[i-1]
  return ""
}
function x(v) { return v == "" ? "—" : sprintf("%.2f×", v) }
function ratio(a, b) { return a == "" || b == "" || b == 0 ? "" : a / b }
function loadOf(run) { return run in loads ? loads[run] : "?" }
function row(figure, value, target, run) {
  printf "| %s | %s | %s | %s |\n", figure, value, target, loadOf(run)
}
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  if (!(name in line)) line[name] = $0
}
$1 == "load" { loads[$2] = $3 "–" $4 }
END {
  print "| figure | measured | target | load (1 min, before–after) |"
  print "|---|---|---|---|"
  r5 = "BenchmarkRelistVersusList/objects=5000"
  r150 = "BenchmarkRelistVersusList/objects=150000"
  row("baseline bytes on disk per object, relist of 5,000 ConfigMaps", x(metric(r5, "disk/json")) " JSON (" metric(r5, "disk-B/object") " B of " metric(r5, "json-B/object") ")", "≤ 0.25×", "relist")
  row("baseline bytes on disk per object, BenchmarkAppendBaseline", x(metric("BenchmarkAppendBaseline", "disk/json")) " JSON", "≤ 0.25×", "storage")
  row("churn bytes per event, BenchmarkChurnBytes", sprintf("%.3f× JSON", metric("BenchmarkChurnBytes", "disk/json")) " (" metric("BenchmarkChurnBytes", "disk-B/event") " B)", "≤ 0.08×", "storage")
  row("Kubernetes Events: bytes and append CPU per Event record, BenchmarkEventsBytes (objects: BenchmarkChurnBytes)", metric("BenchmarkEventsBytes", "disk-B/event") " B (" sprintf("%.3f× JSON", metric("BenchmarkEventsBytes", "disk/json")) "), " metric("BenchmarkEventsBytes", "cpu-µs/event") " µs CPU (objects: " metric("BenchmarkChurnBytes", "cpu-µs/event") " µs)", "—", "storage")
  row("Append vs raw batched INSERT, batch 100 / 1000", x(metric("BenchmarkAppend/batch=100", "krply/raw")) " / " x(metric("BenchmarkAppend/batch=1000", "krply/raw")) " (" metric("BenchmarkAppend/batch=100", "events/s") " / " metric("BenchmarkAppend/batch=1000", "events/s") " events/s)", "≥ 1.0× / ≥ 1.0×", "storage")
  row("AppendBaseline vs raw", x(metric("BenchmarkAppendBaseline", "krply/raw")) " (" metric("BenchmarkAppendBaseline", "events/s") " objects/s)", "≥ 1.0×", "storage")
  row("end-to-end relist vs a bare list, 5,000 ConfigMaps", x(metric(r5, "relist/list")) " (" metric(r5, "relist-s") " s vs " metric(r5, "list-s") " s; client CPU " metric(r5, "relist-cpu-s") " s vs " metric(r5, "list-cpu-s") " s)", "≤ 1.3×", "relist")
  if (r150 in line)
    row("end-to-end relist vs a bare list, 150,000 ConfigMaps", x(metric(r150, "relist/list")) " (" metric(r150, "relist-s") " s vs " metric(r150, "list-s") " s; client CPU " metric(r150, "relist-cpu-s") " s vs " metric(r150, "list-cpu-s") " s; " metric(r150, "disk/json") "× JSON)", "≤ 1.5×", "relist")
  row("snapshot of 20,000 objects, whole CLI process (examples/snapshot)", sprintf("%.2f s wall, %.2f s CPU", metric("BenchmarkSnapshot20k/process", "ns/op") / 1e9, metric("BenchmarkSnapshot20k/process", "cpu-s/op")), "≤ 0.25 s", "snapshot20k")
  row("snapshot of 20,000 objects, library (Open, Snapshot, Close)", sprintf("%.2f s wall, %.2f s CPU", metric("BenchmarkSnapshot20k/library", "ns/op") / 1e9, metric("BenchmarkSnapshot20k/library", "cpu-s/op")), "—", "snapshot20k")
  row("ObjectAt p50 / p99, 1,000,000 events", metric("BenchmarkObjectAt/sqlite", "p50-µs") " / " metric("BenchmarkObjectAt/sqlite", "p99-µs") " µs (" metric("BenchmarkObjectAt/sqlite", "cpu-ms/op") " ms CPU per call)", "p99 ≤ 250 µs", "objectat")
  row("Snapshot of 10,000 objects at T, 1M events", sprintf("%.0f ms wall, %s ms CPU", metric("BenchmarkSnapshot/sqlite", "ns/op") / 1e6, metric("BenchmarkSnapshot/sqlite", "cpu-ms/op")), "≤ 100 ms", "materialize")
  row("Find over 10,000 objects × 100 versions, 1M events (the condition a substring test)", sprintf("%.2f s wall, %.2f s CPU", metric("BenchmarkFind/sqlite", "ns/op") / 1e9, metric("BenchmarkFind/sqlite", "cpu-ms/op") / 1000), "≤ 2 s", "materialize")
  row("Find with a CEL condition (object.data.version == \"3\", 100 values) over 10,000 objects × 100 versions, 1M events (ten streams, cel BenchmarkFind); the same reading resourceVersion too, every version evaluated; the same as a substring test", sprintf("%.2f s wall, %.2f s CPU; %.2f s, %.2f s CPU; %.2f s, %.2f s CPU", metric("BenchmarkFind/cel", "ns/op") / 1e9, metric("BenchmarkFind/cel", "cpu-ms/op") / 1000, metric("BenchmarkFind/cel-distinct", "ns/op") / 1e9, metric("BenchmarkFind/cel-distinct", "cpu-ms/op") / 1000, metric("BenchmarkFind/substring", "ns/op") / 1e9, metric("BenchmarkFind/substring", "cpu-ms/op") / 1000), "≤ 2 s", "celfind")
  row("Diff over 1 h, 50,000 changes", sprintf("%.2f s wall, %.2f s CPU", metric("BenchmarkDiff/sqlite", "ns/op") / 1e9, metric("BenchmarkDiff/sqlite", "cpu-ms/op") / 1000), "≤ 0.5 s", "materialize")
  row("LatestAt p50 / p99, 1,000,000 events (storage only)", metric("BenchmarkLatestAt", "p50-µs") " / " metric("BenchmarkLatestAt", "p99-µs") " µs", "—", "latest")
  v = "BenchmarkVersionIndexBuild"
  row("version index of 1,000,000 events: build CPU per million records; heap per version", metric(v, "cpu-s/M-records") " s; " metric(v, "B/record") " B", "≤ 2 s; ≤ 64 B", "index")
  q = "BenchmarkQueryAPI/clients=32"
  q4 = "BenchmarkQueryAPI/clients=4"
  row("query API, 32 clients, 1,000,000 events, recorder appending: object-at-T / history p99 (p50)", metric(q, "object-p99-ms") " / " metric(q, "history-p99-ms") " ms (" metric(q, "object-p50-ms") " / " metric(q, "history-p50-ms") "); " metric(q, "req/s") " req/s, " metric(q, "load-cpu-ms/req") " ms CPU per request; " metric(q, "errors") " errors; recorder append p99 " metric(q, "append-quiet-p99-ms") " ms alone, " metric(q, "append-loaded-p99-ms") " ms under load", "p99 ≤ 25 ms, 0 errors", "queryapi")
  row("query API, 4 clients, the same journal and recorder: object-at-T / history p99 (p50)", metric(q4, "object-p99-ms") " / " metric(q4, "history-p99-ms") " ms (" metric(q4, "object-p50-ms") " / " metric(q4, "history-p50-ms") "); " metric(q4, "req/s") " req/s; " metric(q4, "errors") " errors", "p99 ≤ 20 ms, 0 errors", "queryapi")
  row("query API throughput against its floor (below), same run", x(ratio(metric(q, "req/s"), metric(q, "floor-req/s"))), "≥ 0.3×", "queryapi")
  row("query API CPU per request, all told: object-at-T / 100-version history", metric(q, "object-cpu-ms") " / " metric(q, "history-cpu-ms") " ms (of which the harness, the same requests against the canned answers: " metric(q, "floor-object-cpu-ms") " / " metric(q, "floor-history-cpu-ms") " ms)", "≤ 0.15 / ≤ 0.8 ms", "queryapi")
  row("recorder's append p99 under the 32 clients against alone", x(ratio(metric(q, "append-loaded-p99-ms"), metric(q, "append-quiet-p99-ms"))) " (the Go scheduler's latency p99, all goroutines: " metric(q, "sched-quiet-p99-ms") " ms alone, " metric(q, "sched-loaded-p99-ms") " ms under load)", "≤ 2×", "queryapi")
  qp = "BenchmarkQueryAPI/clients=32,recorder=process,nice=10"
  row("the same, the recorder in a process of its own on the same journal and the queries' process at nice 10 (15 s): recorder's append p99 under the 32 clients against alone; object-at-T / history p99", x(ratio(metric(qp, "append-loaded-p99-ms"), metric(qp, "append-quiet-p99-ms"))) " (" metric(qp, "append-quiet-p99-ms") " ms alone, " metric(qp, "append-loaded-p99-ms") " ms under load); " metric(qp, "object-p99-ms") " / " metric(qp, "history-p99-ms") " ms, " metric(qp, "req/s") " req/s", "≤ 2×", "queryapiproc")
  row("query API benchmark's floor: the same clients, recorder and HTTP stack against canned answers of the same sizes, p99 of both kinds", metric(q, "floor-p99-ms") " ms; " metric(q, "floor-req/s") " req/s", "—", "queryapi")
  row("query API, a snapshot of 10,000 objects in pages of 1,000: first page / the nine after", metric("BenchmarkSnapshotPages", "first-page-ms") " / " metric("BenchmarkSnapshotPages", "later-pages-ms") " ms", "—", "queryapi")
  row("query API, a diff of the same 10,000 objects, all changed, in pages of 1,000: first page / the nine after", metric("BenchmarkSnapshotPages", "diff-first-page-ms") " / " metric("BenchmarkSnapshotPages", "diff-later-pages-ms") " ms", "—", "queryapi")
  row("why: a Deployment with 50 Pods, 1,000,000 events", metric("BenchmarkWhy", "ms/op") " ms (" metric("BenchmarkWhy", "objects") " objects in the graph)", "≤ 200 ms", "why")
  for (i = 1; i <= 4; i++) {
    split("ExportSQLite Verify ImportSQLite ImportMemory", step, " ")
    split("export, SQLite → NDJSON|verify, NDJSON read and checked|import, NDJSON → SQLite|import, NDJSON → memory", what, "|")
    t = "BenchmarkTransfer/" step[i]
    row(what[i] ", 1,000,000 records", metric(t, "records/s") " records/s (" metric(t, "µs-CPU/record") " µs CPU per record)", "≥ 50,000/s", "transfer")
  }
}
AWK
)
echo "$table"

# Replace the table in docs/performance.md, keeping everything around it.
doc=docs/performance.md
TABLE="$table" awk '
  /^<!-- make bench/ { print; print ENVIRON["TABLE"]; skip = 1; next }
  /^<!-- end of make bench -->/ { skip = 0 }
  !skip
' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
echo "bench: rewrote the table in $doc" >&2
