#!/usr/bin/env bash
# hack/postgres.sh: make sure the PostgreSQL server programs (initdb,
# postgres) that the tests of storage/postgres start are installed; install
# Debian's postgresql package with apt-get when they are missing. Fails
# loudly when they cannot be installed: those tests never skip.
# Prints the folder holding the programs on its last line.
set -euo pipefail

find_programs() {
	if [[ -n "${KRPLY_PG_BIN:-}" && -x "$KRPLY_PG_BIN/initdb" && -x "$KRPLY_PG_BIN/postgres" ]]; then
		echo "$KRPLY_PG_BIN"; return 0
	fi
	local p
	if p=$(command -v initdb 2>/dev/null); then
		p=$(dirname "$(readlink -f "$p")")
		if [[ -x "$p/postgres" ]]; then echo "$p"; return 0; fi
	fi
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
		if [[ -x "$d/initdb" && -x "$d/postgres" ]]; then echo "$d"; return 0; fi
	done
	return 1
}

if dir=$(find_programs); then
	echo "$dir"
	exit 0
fi

echo "PostgreSQL server programs (initdb, postgres) not found; installing Debian's postgresql package" >&2
if ! command -v apt-get >/dev/null; then
	echo "hack/postgres.sh: no apt-get here: install the PostgreSQL server (initdb, postgres) yourself, or point KRPLY_PG_BIN at its bin folder" >&2
	exit 1
fi
sudo=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null; then
		echo "hack/postgres.sh: not root and no sudo: run 'apt-get install postgresql' as root, or point KRPLY_PG_BIN at a PostgreSQL bin folder" >&2
		exit 1
	fi
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update >&2
"${sudo[@]}" apt-get install -y --no-install-recommends postgresql >&2
if ! dir=$(find_programs); then
	echo "hack/postgres.sh: installed postgresql, yet initdb and postgres are still missing" >&2
	exit 1
fi
echo "$dir"
