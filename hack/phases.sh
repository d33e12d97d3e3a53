#!/usr/bin/env bash
# Runs the phases of make test (make targets, given as arguments) one after
# another, stops at the first that fails, and prints each phase's time at
# the end, also when one failed.
set -uo pipefail
make=${MAKE:-make}
times=()
total=$SECONDS
report() {
  echo
  echo "make test phases:"
  for t in "${times[@]}"; do echo "  $t"; done
  echo "  total $(( (SECONDS - total) / 60 ))m$(( (SECONDS - total) % 60 ))s"
}
trap report EXIT
for phase in "$@"; do
  start=$SECONDS
  echo "=== make $phase"
  if ! "$make" --no-print-directory "$phase"; then
    times+=("$(printf '%-14s %4ds  FAILED' "$phase" $((SECONDS - start)))")
    exit 1
  fi
  times+=("$(printf '%-14s %4ds' "$phase" $((SECONDS - start)))")
done
