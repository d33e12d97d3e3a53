#!/usr/bin/env bash
# go test -exec program of `make test TEST_CPU=1` (hack/phases.sh): runs a
# test binary and appends its wall time and CPU time (its own and its
# children's: control planes, PostgreSQL, recorders it started) with its
# package folder to $KRPLY_CPU_LOG.
bin=$1
shift
root=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
pkg=${PWD#"$root"}
pkg=${pkg#/}
exec /usr/bin/time -f "%e %U %S ${pkg:-.} $(basename "$bin" .test)" -a -o "$KRPLY_CPU_LOG" "$bin" "$@"
