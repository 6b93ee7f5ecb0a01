#!/bin/sh
# Bytes per pending item of the stored layouts compared in docs/benchmarks.md
# ("The one layout that would meet it"), on a throwaway redis-server.
# Usage: bench/layout/run.sh [items...]   (default: 20000 200000)
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
port=${LAYOUT_PORT:-7399}
redis-server --port "$port" --save '' --appendonly no --daemonize yes >/dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
mem() { redis-cli -p "$port" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p'; }
for n in ${@:-20000 200000}; do
  for run in "redelay 43" "bucketed 43" "bucketed 30" "redisson 0"; do
    set -- $run
    redis-cli -p "$port" flushall >/dev/null
    before=$(mem)
    redis-cli -p "$port" --eval "$dir/layout.lua" , "$n" "$1" "$2" >/dev/null
    after=$(mem)
    echo "items=$n layout=$1 envelope=$2 bytes/item=$(( (after - before) / n ))"
  done
done
