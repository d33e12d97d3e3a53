#!/usr/bin/env bash
# Checks the documentation (make docs-check; make test runs it):
#   - every relative link in a Markdown file points at a file or folder that
#     exists and, into a Markdown page, at a heading anchor it has
#     (tools/docscheck, GitHub's anchor rules);
#   - the generated reference is what today's code generates:
#     docs/reference/metrics.md from package metrics, and
#     docs/reference/cli/ from the kubectl plugin's command tree.
# Each failure names the file (and line) and how to fix it; the exit code is
# 1 when anything is broken or stale.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
GO=${GO:-go}
# The core module on its own requirements; the plugin through the workspace.
export GOWORK=off
status=0

echo "docs-check: links in Markdown files"
"$GO" run ./tools/docscheck || status=1

echo "docs-check: docs/reference/metrics.md (go test ./metrics -run TestReference -update rewrites it)"
out=$("$GO" test -count=1 -run '^TestReference$' ./metrics 2>&1) || { echo "$out"; status=1; }

echo "docs-check: docs/reference/cli/ (cd cmd/kubectl-krply && go test -run TestCLIReference -update . rewrites it)"
out=$(cd cmd/kubectl-krply && GOWORK="$root/go.work" "$GO" test -count=1 -run '^TestCLIReference$' . 2>&1) || { echo "$out"; status=1; }

if [[ $status -ne 0 ]]; then
  echo "docs-check: FAILED" >&2
fi
exit $status
