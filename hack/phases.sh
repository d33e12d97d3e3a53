#!/usr/bin/env bash
# Runs the phases of make test (make targets, given as arguments) one after
# another, all of them even when one fails (so that one run shows every
# failure), prints each phase's time at the end, and fails when any phase
# failed.
set -uo pipefail
make=${MAKE:-make}
times=()
failed=()
total=$SECONDS
report() {
  echo
  echo "make test phases:"
  for t in "${times[@]}"; do echo "  $t"; done
  echo "  total $(( (SECONDS - total) / 60 ))m$(( (SECONDS - total) % 60 ))s"
  if [[ ${#failed[@]} -gt 0 ]]; then echo "FAILED: ${failed[*]}"; fi
}
trap report EXIT
for phase in "$@"; do
  start=$SECONDS
  echo "=== make $phase"
  if ! "$make" --no-print-directory "$phase"; then
    times+=("$(printf '%-14s %4ds  FAILED' "$phase" $((SECONDS - start)))")
    failed+=("$phase")
    continue
  fi
  times+=("$(printf '%-14s %4ds' "$phase" $((SECONDS - start)))")
done
[[ ${#failed[@]} -eq 0 ]]
