#!/usr/bin/env bash
# Compares the server time per call of the hot scripts (offer, pop,
# receive, ack) of two revisions, A and B, as each composes them:
#
#   scripts/ab-lua.sh [-r runs] [-b blocks] [-m mode] A B
#
# Server time per script call moves by a few per cent when a change adds a
# command or a prelude definition to a script: far below what wall-clock
# benchmarks (scripts/ab.sh) resolve on a shared machine. So each revision's
# composed scripts are written out (a test overlaid on its internal/lua),
# and bench/luaab calls both sets on one redis-server in alternating blocks
# and reports, per script, the median ratio B/A of the blocks (above 1: B
# is slower). A run's ratios move by a few per cent from one server start
# to the next, so the script starts a fresh server for each of -r runs
# (default 5; -b blocks per run, default 100) and gives each run's ratio
# and their median. With two or more cores, the server runs on CPU 1 and
# the client on CPU 0 (taskset), so that they do not take turns on one.
# -m D has B's delayed offers name a generated ID (offer.lua's mode D,
# which B must know), as delayed.Offer without WithID does; A's stay d.
#
# Environment: REDIS_SERVER, REDIS_CLI.
set -euo pipefail

runs=5
blocks=100
mode=d
redis_server=${REDIS_SERVER:-redis-server}
redis_cli=${REDIS_CLI:-redis-cli}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}
while getopts r:b:m:h opt; do
	case $opt in
	r) runs=$OPTARG ;;
	b) blocks=$OPTARG ;;
	m) mode=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 2)) || usage

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/redelay-ab-lua.XXXXXX")
redis_pid=
cleanup() {
	if [[ -n $redis_pid ]]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# compose writes the composed hot scripts of revision $2 to $work/$1.lua.
compose() {
	local side=$1 sha src=$work/$1
	sha=$(git -C "$root" rev-parse --verify "$2^{commit}")
	echo "ab-lua.sh: $side = $2 ($sha)"
	mkdir -p "$src" "$work/$side.lua"
	git -C "$root" archive "$sha" | tar -x -C "$src"
	cat >"$src/internal/lua/zz_ab_lua_test.go" <<'GO'
package lua

import (
	"os"
	"path/filepath"
	"testing"
)

func TestABLuaCompose(t *testing.T) {
	dir := os.Getenv("AB_LUA_DIR")
	for name, src := range map[string]string{"offer": offerSrc, "pop": popSrc, "receive": receiveSrc, "ack": ackSrc} {
		if err := os.WriteFile(filepath.Join(dir, name+".lua"), []byte(compose(src)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
GO
	(cd "$src" && AB_LUA_DIR=$work/$side.lua go test -count=1 -run '^TestABLuaCompose$' ./internal/lua/ >/dev/null)
}
compose a "$1"
compose b "$2"
(cd "$root/bench" && go build -o "$work/luaab" ./luaab)

on_server=() on_client=()
if command -v taskset >/dev/null && (($(nproc) > 1)); then
	on_server=(taskset -c 1) on_client=(taskset -c 0)
fi
for run in $(seq "$runs"); do
	port=$((20000 + RANDOM % 20000))
	"${on_server[@]}" "$redis_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$work" --logfile '' >/dev/null 2>&1 &
	redis_pid=$!
	for _ in $(seq 50); do
		"$redis_cli" -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.1
	done
	"${on_client[@]}" "$work/luaab" -addr "127.0.0.1:$port" -blocks "$blocks" -mode-b "$mode" "$work/a.lua" "$work/b.lua" |
		sed "s/^/run $run /" | tee -a "$work/runs.txt"
	kill "$redis_pid"
	wait "$redis_pid" 2>/dev/null || true
	redis_pid=
done
echo
echo "B/A per run, and their median (above 1: B is slower)"
awk '{r[$3] = r[$3] " " $11; v[$3, ++n[$3]] = $11}
END {
	for (m in n) {
		k = n[m]
		for (i = 1; i <= k; i++) s[i] = v[m, i]
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
		printf "%-14s%s   median %s\n", m, r[m], s[int((k + 1) / 2)]
	}
}' "$work/runs.txt" | sort
