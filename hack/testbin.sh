#!/usr/bin/env bash
# Builds kube-apiserver and etcd for the local test control plane from the Go
# modules pinned in tools/testbin, into a cache folder outside the repository
# keyed by version, and only when they are missing. Prints the folder on the
# last line of standard output, in the envtest convention (KUBEBUILDER_ASSETS).
#
# KUBEBUILDER_ASSETS, when set to a folder with both binaries, is used as is.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/testbin"
k8s_version=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
etcd_version=$(awk '$1=="go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    echo "$KUBEBUILDER_ASSETS"
    exit 0
  fi
  echo "testbin: KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver or etcd" >&2
  exit 1
fi

cache="${KRPLY_TESTBIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/krply/testbin}"
dir="$cache/kube-apiserver-$k8s_version-etcd-$etcd_version"
mkdir -p "$dir"

build() { # name package ldflags
  local name=$1 pkg=$2 ldflags=$3
  if [[ -x "$dir/$name" ]]; then
    return 0
  fi
  echo "testbin: building $name from $pkg (a cold build of kube-apiserver takes ~15 minutes and ~3 GiB of RAM)..." >&2
  local start=$SECONDS
  # Built aside and renamed, so a concurrent run never sees half a binary.
  local tmp="$dir/$name.tmp.$$"
  (cd "$mod" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$tmp" "$pkg") >&2
  mv "$tmp" "$dir/$name"
  echo "testbin: built $name in $((SECONDS - start))s" >&2
}

build etcd go.etcd.io/etcd/server/v3 ""
v=k8s.io/component-base/version
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $v.gitVersion=$k8s_version -X $v.gitMajor=$major -X $v.gitMinor=$minor -X $v.gitTreeState=clean -X $v.buildDate=1970-01-01T00:00:00Z"

"$dir/kube-apiserver" --version >&2
echo "$dir"
