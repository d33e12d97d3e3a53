#!/usr/bin/env bash
# Builds the binary of the container image into the folder $1 — the
# Dockerfile's build stage runs it, and deploy's tests run it too:
#   kubectl-krply   the recorder (`kubectl-krply record`, recorder)
#                   and the command-line tool (history, blame, snapshot,
#                   replay, ...), for `kubectl exec` into the pod; its version
#                   stamped from $VERSION
# It is the plugin's nested module (cmd/kubectl-krply), so that it can
# take dependencies the core module must not (cobra, cli-runtime, and the
# PostgreSQL store's driver: --journal postgres://…).
set -euo pipefail
out=$(realpath -m "${1:?usage: image-binaries.sh OUTDIR}")
version=${VERSION:-dev}
export CGO_ENABLED=0
# The plugin's module requires the core module at the version of its release:
# the repository's go.work resolves it to the folder here.
root=$(cd "$(dirname "$0")/.." && pwd)
export GOWORK="$root/go.work"
cd "$root/cmd/kubectl-krply"
go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}/kubectl-krply" .
