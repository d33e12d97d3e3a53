#!/usr/bin/env bash
# Runs the history-truth test of each backend again and again, with a fresh
# seed each run and a CPU hog beside it, and prints every run's backend,
# seed, outcome and time; the output of a failed run is kept. It stops after
# TRUTH_RUNS runs of each backend and fails when any run failed, printing
# the longest streak of passes of each backend.
#
#   TRUTH_RUNS      runs of each backend (default 50)
#   TRUTH_BACKENDS  which backends, in turn (default "sqlite pg")
#   TRUTH_HOGS      busy processes beside each run (default 1)
#   TRUTH_LOG       folder for the log and the failed runs' output (default a new temporary folder)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs=${TRUTH_RUNS:-50}
backends=${TRUTH_BACKENDS:-sqlite pg}
hogs=${TRUTH_HOGS:-1}
log=${TRUTH_LOG:-$(mktemp -d -t krply-truth-loop-XXXXXX)}
mkdir -p "$log/bin"

KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -n 1) || { echo "no control plane binaries" >&2; exit 1; }
export KUBEBUILDER_ASSETS KRPLY_REQUIRE_TESTENV=1
declare -A dir bin
for b in $backends; do
  case $b in
  sqlite)
    dir[$b]=$root/krplytest/truth
    (cd "${dir[$b]}" && GOWORK=off go test -c -o "$log/bin/sqlite.test" .) || exit 1
    ;;
  pg)
    KRPLY_PG_BIN=$(hack/postgres.sh | tail -n 1) || { echo "no PostgreSQL" >&2; exit 1; }
    export KRPLY_PG_BIN
    dir[$b]=$root/storage/postgres/internal/pgtruth
    (cd "${dir[$b]}" && GOWORK=$root/go.work go test -c -o "$log/bin/pg.test" .) || exit 1
    ;;
  *) echo "unknown backend $b (sqlite or pg)" >&2; exit 2 ;;
  esac
  bin[$b]=$log/bin/$b.test
done

hog_pids=()
stop_hogs() { [[ ${#hog_pids[@]} -gt 0 ]] && kill "${hog_pids[@]}" 2>/dev/null; hog_pids=(); }
trap stop_hogs EXIT

declare -A passed streak best failed
for b in $backends; do passed[$b]=0 streak[$b]=0 best[$b]=0 failed[$b]=0; done
echo "truth loop: $runs runs of each of: $backends; $hogs CPU hog(s) beside each; log in $log"
printf '%-8s %-6s %-10s %-6s %6s %s\n' time backend seed result wall load | tee -a "$log/runs.txt"
for ((i = 1; i <= runs; i++)); do
  for b in $backends; do
    for ((h = 0; h < hogs; h++)); do (while :; do :; done) & hog_pids+=($!); done
    seed=$(( (RANDOM << 15 | RANDOM) + 1 ))
    out=$log/$b-$seed.log
    start=$SECONDS
    (cd "${dir[$b]}" && "${bin[$b]}" -test.run '^TestTruth$' -test.count=1 -test.v -test.timeout 30m -truth.seed="$seed") >"$out" 2>&1
    rc=$?
    stop_hogs
    result=pass
    if [[ $rc -eq 0 ]]; then
      passed[$b]=$((passed[$b] + 1)) streak[$b]=$((streak[$b] + 1))
      ((streak[$b] > best[$b])) && best[$b]=${streak[$b]}
      rm -f "$out"
    else
      result=FAIL failed[$b]=$((failed[$b] + 1)) streak[$b]=0
    fi
    printf '%-8s %-6s %-10s %-6s %5ds %s\n' "$(date +%H:%M:%S)" "$b" "$seed" "$result" $((SECONDS - start)) "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$log/runs.txt"
    [[ $result == FAIL ]] && grep -E 'mismatch|seed|FAIL|timed out|panic' "$out" | head -20 | sed 's/^/    /' | tee -a "$log/runs.txt"
  done
done
status=0
for b in $backends; do
  echo "$b: ${passed[$b]} passed, ${failed[$b]} failed, longest streak of passes ${best[$b]}, current ${streak[$b]}" | tee -a "$log/runs.txt"
  ((failed[$b] > 0)) && status=1
done
exit $status
