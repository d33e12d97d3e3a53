#!/usr/bin/env bash
# The krply quickstart (`make demo`): builds the local control plane binaries
# when they are missing, showing progress, then runs examples/demo on them,
# which ends by serving the web UI on the demo's journal and printing its URL
# (arguments go to it: -listen ADDR, -journal PATH, -v).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

assets=${KUBEBUILDER_ASSETS:-}
if [[ -z "$assets" ]]; then
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  hack/testbin.sh >"$out" &
  pid=$!
  start=$SECONDS
  next=15
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (( SECONDS - start >= next )); then
      echo "demo: still building the control plane binaries ($((SECONDS - start))s so far; only the first run builds them)..." >&2
      next=$((next + 30))
    fi
  done
  if ! wait "$pid"; then
    echo "demo: building the control plane failed (see above); retry with: make testbin" >&2
    exit 1
  fi
  assets=$(tail -n 1 "$out")
fi

echo "demo: control plane binaries in $assets" >&2
KUBEBUILDER_ASSETS="$assets" exec go run ./examples/demo "$@"
