#!/usr/bin/env bash
# Builds the binaries of the container image into the folder $1 — the
# Dockerfile's build stage runs it, and deploy's tests run it too:
#   krply-record    the recorder (examples/record), its version stamped from $VERSION
#   krply-snapshot, krply-history, krply-diff, krply-replay
#                   the query tools (examples/*), for `kubectl exec` into the pod
set -euo pipefail
out=${1:?usage: image-binaries.sh OUTDIR}
version=${VERSION:-dev}
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w -X main.version=${version}" -o "${out}/krply-record" ./examples/record
for tool in snapshot history diff replay; do
	go build -trimpath -ldflags "-s -w" -o "${out}/krply-${tool}" "./examples/${tool}"
done
