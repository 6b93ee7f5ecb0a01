#!/bin/sh
# Server time per item of inserting and deleting items in today's layout
# and with a bucketed ID index, in interleaved rounds, on a throwaway
# redis-server (docs/benchmarks.md, "The one layout that would meet it").
# Usage: bench/layout/cost.sh [rounds] [items]   (default: 5 50000)
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
port=${LAYOUT_PORT:-7399}
rounds=${1:-5}
n=${2:-50000}
redis-server --port "$port" --save '' --appendonly no --daemonize yes >/dev/null
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
usec() { redis-cli -p "$port" info commandstats | sed -n 's/^cmdstat_eval:.*usec=\([0-9]*\),.*/\1/p'; }
for r in $(seq "$rounds"); do
  line="round $r:"
  for layout in redelay bucketed; do
    redis-cli -p "$port" flushall >/dev/null
    for op in add del; do
      redis-cli -p "$port" config resetstat >/dev/null
      redis-cli -p "$port" --eval "$dir/cost.lua" , "$n" "$layout" "$op" >/dev/null
      line="$line $layout $op $(( $(usec) * 1000 / n )) ns/item;"
    done
  done
  echo "$line"
done
