#!/usr/bin/env bash
# Finds a headless-capable Chromium for the web UI's browser tests and
# screenshots (server/ui/browsertest), installing Debian's `chromium` package
# with apt-get when none is found. Prints the browser's path on the last line
# of standard output.
#
# KRPLY_CHROMIUM, when set, names the browser to use as is.
# Fails, naming the fix, when no browser can be had: the browser tests are
# never skipped for want of one.
set -euo pipefail

if [[ -n "${KRPLY_CHROMIUM:-}" ]]; then
  if [[ -x "$KRPLY_CHROMIUM" ]]; then
    echo "$KRPLY_CHROMIUM"
    exit 0
  fi
  echo "chromium: KRPLY_CHROMIUM=$KRPLY_CHROMIUM is not an executable; point it at a Chromium or Chrome binary, or unset it" >&2
  exit 1
fi

find_browser() {
  local name
  for name in chromium chromium-browser google-chrome-stable google-chrome headless_shell; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return 0
    fi
  done
  return 1
}

if browser=$(find_browser); then
  echo "$browser"
  exit 0
fi

fix="install Chromium (Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y chromium) or set KRPLY_CHROMIUM to a Chromium or Chrome binary"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: no Chromium found and no apt-get to install one; $fix" >&2
  exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "chromium: no Chromium found, and installing one needs root; $fix" >&2
    exit 1
  fi
  sudo=(sudo -n)
fi
echo "chromium: no Chromium found; installing Debian's chromium package (once)..." >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be absent or stale on a fresh machine: update first.
# Another apt-get holding the lock is waited for, up to ten minutes.
apt_opts=(-o DPkg::Lock::Timeout=600 -q)
if ! "${sudo[@]}" apt-get "${apt_opts[@]}" update >&2 ||
  ! "${sudo[@]}" apt-get "${apt_opts[@]}" install -y --no-install-recommends chromium fonts-dejavu-core >&2; then
  echo "chromium: installing the chromium package failed (see above); $fix" >&2
  exit 1
fi
if ! browser=$(find_browser); then
  echo "chromium: the chromium package installed but no browser binary is on PATH; $fix" >&2
  exit 1
fi
echo "$browser"
