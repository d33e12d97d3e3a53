#!/usr/bin/env bash
# Runs the phases of make test (make targets, given as arguments) one after
# another, all of them even when one fails (so that one run shows every
# failure), prints each phase's time at the end, and fails when any phase
# failed. A phase written a+b runs the targets a and b at the same time,
# each one's output printed when it ends: the test phases leave a core idle
# much of the time, each waiting on its control plane or PostgreSQL.
set -uo pipefail
make=${MAKE:-make}
times=()
failed=()
total=$SECONDS
if [[ -n ${TEST_CPU:-} ]]; then
  command -v /usr/bin/time >/dev/null || { echo "TEST_CPU needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 1; }
  export KRPLY_CPU_LOG
  KRPLY_CPU_LOG=$(mktemp)
  export GOFLAGS="${GOFLAGS:-} -exec=$(cd "$(dirname "$0")" && pwd)/cpu-exec.sh"
fi
cpu_report() {
  [[ -n ${TEST_CPU:-} && -s $KRPLY_CPU_LOG ]] || return 0
  echo
  echo "test binaries by CPU time (seconds: CPU, wall; package):"
  awk '$1 ~ /^[0-9.]+$/ { printf "  %7.1f %7.1f  %s\n", $2 + $3, $1, $4; cpu += $2 + $3 } END { printf "  %7.1f         all test binaries\n", cpu }' "$KRPLY_CPU_LOG" | sort -rn | head -25
  rm -f "$KRPLY_CPU_LOG"
}
report() {
  cpu_report
  echo
  echo "make test phases:"
  for t in "${times[@]}"; do echo "  $t"; done
  echo "  total $(( (SECONDS - total) / 60 ))m$(( (SECONDS - total) % 60 ))s"
  if [[ ${#failed[@]} -gt 0 ]]; then echo "FAILED: ${failed[*]}"; fi
}
trap report EXIT
note() { # phase start status [cpu-file]
  local mark="" cpu=""
  [[ $3 -ne 0 ]] && { mark="  FAILED"; failed+=("$1"); }
  [[ -n ${4:-} && -s $4 ]] && cpu=$(awk 'END { printf "  %5.0fs CPU", $1 + $2 }' "$4") # the last line: time writes the exit status before it
  times+=("$(printf '%-14s %4ds%s%s' "$1" $((SECONDS - $2)) "$cpu" "$mark")")
}
# timed runs a phase's make, with its CPU time (its processes' and all their
# children's) written to the file $1 under TEST_CPU.
timed() {
  local out=$1
  shift
  if [[ -n ${TEST_CPU:-} ]]; then
    /usr/bin/time -f '%U %S' -o "$out" "$make" --no-print-directory "$@"
  else
    "$make" --no-print-directory "$@"
  fi
}
for phase in "$@"; do
  start=$SECONDS
  if [[ $phase != *+* ]]; then
    echo "=== make $phase"
    cpu=$(mktemp)
    timed "$cpu" "$phase"
    note "$phase" "$start" $? "$cpu"
    rm -f "$cpu"
    continue
  fi
  IFS=+ read -r -a group <<<"$phase"
  echo "=== make ${group[*]} (at the same time)"
  dir=$(mktemp -d)
  declare -A pids=()
  for p in "${group[@]}"; do
    timed "$dir/$p.cpu" "$p" >"$dir/$p.log" 2>&1 &
    pids[$p]=$!
  done
  while [[ ${#pids[@]} -gt 0 ]]; do
    wait -n -p done "${pids[@]}"
    status=$?
    for p in "${!pids[@]}"; do
      [[ ${pids[$p]} == "$done" ]] || continue
      echo "=== make $p (ended)"
      cat "$dir/$p.log"
      note "$p" "$start" "$status" "$dir/$p.cpu"
      unset "pids[$p]"
    done
  done
  unset pids
  rm -rf "$dir"
done
[[ ${#failed[@]} -eq 0 ]]
