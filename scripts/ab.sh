#!/usr/bin/env bash
# Compares the hot paths of two revisions, A and B, to check that a change
# makes none of them slower:
#
#   scripts/ab.sh [-n rounds] [-t benchtime] [-o dir] A B
#
# Each revision is exported with `git archive` into a temporary directory
# and its benchmark binaries are built once (`go test -c`). The runs are
# interleaved, A then B for each benchmark of each round, so that a machine
# getting busier or quieter weighs on both sides alike. Every run of a test
# binary starts its own redis-server (the package's shared test server, and
# one on a loopback port for benchmarks that use the public API alone), so
# no run inherits another's keys.
#
# Measured, lower is better for each:
#   offer-1        delayed BenchmarkOffer/serial          ns per offer, 1 producer
#   offer-1-deadline delayed BenchmarkOfferDeadline       the same, each offer under a context with a deadline
#   offer-8        delayed BenchmarkOfferProducers        ns per offer, 8 producers
#   take-drain     blocking BenchmarkTake/parallel        ns per item taken
#   recvack-drain  blocking BenchmarkReceiveAck/parallel  ns per item received and acked
#   trickle-p50    delayed BenchmarkLateness              ms late, median item
#   trickle-p99    delayed BenchmarkLateness              ms late, 99th percentile
#
# A benchmark is looked up by its function name in each revision, so it may
# live in another package in B than in A. delayed/bench_ab_test.go and
# delayed/bench_ab_deadline_test.go (public API only) are copied from this
# checkout into a revision that lacks them.
#
# The summary gives, per metric, the median of A, the median of B and B/A
# (above 1: B is slower), and the same for the allocations per op, which a
# busy machine moves far less than the times. benchstat's table follows
# when benchstat runs (AB_BENCHSTAT, default `go run
# golang.org/x/perf/cmd/benchstat@…`; set it empty to skip). Raw outputs
# stay in the output directory (-o, default a new temporary directory).
#
# Environment: AB_ROUNDS (5), AB_BENCHTIME (1s; the lateness benchmark
# always runs once, about 11 s), REDIS_SERVER, REDIS_CLI.
set -euo pipefail

rounds=${AB_ROUNDS:-5}
benchtime=${AB_BENCHTIME:-1s}
out=
redis_server=${REDIS_SERVER:-redis-server}
redis_cli=${REDIS_CLI:-redis-cli}
benchstat=${AB_BENCHSTAT-go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

while getopts n:t:o:h opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	o) out=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
(($# == 2)) || usage
rev_a=$1
rev_b=$2

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sha_a=$(git -C "$root" rev-parse --verify "$rev_a^{commit}")
sha_b=$(git -C "$root" rev-parse --verify "$rev_b^{commit}")
command -v "$redis_server" >/dev/null || {
	echo "ab.sh: $redis_server not found (sudo apt-get install redis-server)" >&2
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/redelay-ab.XXXXXX")
if [[ -z $out ]]; then
	out=$work/out
fi
mkdir -p "$out"
redis_pid=
cleanup() {
	if [[ -n $redis_pid ]]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	rm -rf "$work/src" "$work/a" "$work/b" "$work/redis" "$work/run.txt" "$work"/[ab].bs "$work"/[ab].head
	if [[ $out != "$work"/* ]]; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The metrics: name, the package that held the benchmark when this script
# was written, benchmark function, -bench pattern, unit read from the
# result line, whether the benchmark runs once (1x) or for -t.
metrics=(
	"offer-1 delayed BenchmarkOffer ^BenchmarkOffer\$/^serial\$ ns/op t"
	"offer-1-deadline delayed BenchmarkOfferDeadline ^BenchmarkOfferDeadline\$ ns/op t"
	"offer-8 delayed BenchmarkOfferProducers ^BenchmarkOfferProducers\$ ns/op t"
	"take-drain blocking BenchmarkTake ^BenchmarkTake\$/^parallel\$ ns/op t"
	"recvack-drain blocking BenchmarkReceiveAck ^BenchmarkReceiveAck\$/^parallel\$ ns/op t"
	"trickle delayed BenchmarkLateness ^BenchmarkLateness\$ p50-ms 1x"
)
overlay=(delayed/bench_ab_test.go delayed/bench_ab_deadline_test.go)

# build exports revision sha into $work/src and builds the test binary of
# every package that holds one of the metrics' benchmarks, then moves the
# tree to $work/side/src. -trimpath keeps the temporary directory out of
# the build, so the packages two revisions share, and every package of a
# revision built before, come from Go's build cache. It records which
# binary runs which benchmark, and where, in $work/side/where.
build() {
	local side=$1 sha=$2 dir=$work/$1 src=$work/src
	mkdir -p "$src" "$dir/bin"
	git -C "$root" archive "$sha" | tar -x -C "$src"
	local f
	for f in "${overlay[@]}"; do
		if [[ ! -e $src/$f && -d $src/$(dirname "$f") ]]; then
			cp "$root/$f" "$src/$f"
			echo "ab.sh: $side ($sha): added $f from this checkout"
		fi
	done
	: >"$dir/where"
	local m name home fn pkg bin
	for m in "${metrics[@]}"; do
		read -r name home fn _ <<<"$m"
		# The package named in the spec first; if the benchmark moved, the
		# first package that declares it.
		pkg=$(cd "$src" && {
			grep -l "^func $fn(b \*testing.B)" "$home"/*_test.go 2>/dev/null || true
			grep -rl --include='*_test.go' "^func $fn(b \*testing.B)" . || true
		} | head -n1 | xargs -r dirname)
		pkg=./${pkg#./}
		if [[ $pkg == ./ ]]; then
			echo "ab.sh: $side ($sha) has no $fn; $name is not measured" >&2
			continue
		fi
		bin=$dir/bin/$(echo "${pkg#./}" | tr / _).test
		if [[ ! -x $bin ]]; then
			echo "ab.sh: building $side ($sha) $pkg"
			(cd "$src" && go test -c -trimpath -o "$bin" "$pkg")
		fi
		echo "$name $bin $dir/src/${pkg#./}" >>"$dir/where"
	done
	mv "$src" "$dir/src"
}

# start_redis starts a redis-server on a free loopback port and exports its
# address as REDELAY_BENCH_ADDR.
start_redis() {
	mkdir -p "$work/redis"
	local port try
	for try in 1 2 3 4 5 6 7 8 9 10; do
		port=$((20000 + RANDOM % 20000))
		"$redis_server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$work/redis" --logfile '' >/dev/null 2>&1 &
		redis_pid=$!
		local i
		for i in $(seq 50); do
			if "$redis_cli" -p "$port" ping >/dev/null 2>&1; then
				export REDELAY_BENCH_ADDR=127.0.0.1:$port
				return
			fi
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.05
		done
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
		redis_pid=
	done
	echo "ab.sh: could not start $redis_server" >&2
	exit 1
}

stop_redis() {
	kill "$redis_pid" 2>/dev/null || true
	wait "$redis_pid" 2>/dev/null || true
	redis_pid=
}

# run runs one metric's benchmark for one side and appends its result lines
# to $out/side.txt (benchstat's input) and its whole output to the log.
run() {
	local side=$1 name=$2 pattern=$3 bt=$4 line bin pkgdir
	line=$(grep "^$name " "$work/$side/where" || true)
	[[ -n $line ]] || return 0
	read -r _ bin pkgdir <<<"$line"
	[[ $bt == t ]] && bt=$benchtime
	start_redis
	local status=0
	(cd "$pkgdir" && "$bin" -test.run '^$' -test.bench "$pattern" -test.benchtime "$bt" -test.benchmem) \
		>"$work/run.txt" 2>&1 || status=$?
	stop_redis
	{
		echo "### $side round $round $name"
		cat "$work/run.txt"
	} >>"$out/log.txt"
	if ((status != 0)); then
		echo "ab.sh: $side $name failed (exit $status); see $out/log.txt" >&2
		tail -n 20 "$work/run.txt" >&2
		exit 1
	fi
	grep '^Benchmark' "$work/run.txt" >>"$out/$side.txt" || true
	# The machine's lines, for benchstat; not pkg, which differs by metric.
	grep -E '^(goos|goarch|cpu):' "$work/run.txt" | sort -u >"$work/$side.head" || true
}

echo "ab.sh: A = $rev_a ($sha_a), B = $rev_b ($sha_b), $rounds rounds, benchtime $benchtime"
echo "ab.sh: output in $out"
build a "$sha_a"
build b "$sha_b"
: >"$out/a.txt"
: >"$out/b.txt"
: >"$out/log.txt"
for ((round = 1; round <= rounds; round++)); do
	for m in "${metrics[@]}"; do
		read -r name _ _ pattern _ bt <<<"$m"
		echo "ab.sh: round $round/$rounds $name"
		run a "$name" "$pattern" "$bt"
		run b "$name" "$pattern" "$bt"
	done
done

# The summary: for each metric, every value of A and of B in round order,
# their medians and B/A; then the allocations per op of the same
# benchmarks, which a busy machine moves far less than the times.
summary() {
	local name home fn pattern unit bt rows=() m
	for m in "${metrics[@]}"; do
		read -r name home fn pattern unit bt <<<"$m"
		if [[ $name == trickle ]]; then
			rows+=("trickle-p50 $home $fn $pattern p50-ms $bt" "trickle-p99 $home $fn $pattern p99-ms $bt")
		else
			rows+=("$m")
		fi
	done
	for m in "${metrics[@]}"; do
		read -r name home fn pattern unit bt <<<"$m"
		if [[ $unit == ns/op ]]; then
			rows+=("$name $home $fn $pattern allocs/op $bt")
		fi
	done
	printf '%-14s %14s %14s %8s   %s\n' metric "median A" "median B" "B/A" "unit (A rounds | B rounds)"
	for m in "${rows[@]}"; do
		read -r name home fn pattern unit bt <<<"$m"
		# The benchmark's result-line name: the pattern without anchors.
		local bname=${pattern//^/}
		bname=${bname//\$/}
		awk -v bname="$bname" -v unit="$unit" -v name="$name" '
			{
				side = FILENAME == ARGV[1] ? 1 : 2
				n = $1; sub(/-[0-9]+$/, "", n)
				if (n != bname) next
				for (i = 3; i < NF; i++) if ($(i+1) == unit) v[side, ++c[side]] = $i
			}
			function median(s,   k, j, t, a) {
				if (c[s] == 0) return ""
				for (k = 1; k <= c[s]; k++) a[k] = v[s, k] + 0
				for (k = 2; k <= c[s]; k++) for (j = k; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
				return c[s] % 2 ? a[(c[s]+1)/2] : (a[c[s]/2] + a[c[s]/2+1]) / 2
			}
			function num(x) { return x >= 1000 ? sprintf("%.0f", x) : sprintf("%.4g", x) }
			function list(s,   k, r) { r = ""; for (k = 1; k <= c[s]; k++) r = r (k > 1 ? " " : "") v[s, k]; return r }
			END {
				ma = median(1); mb = median(2)
				if (ma == "" || mb == "") { printf "%-14s %14s %14s %8s   %s\n", name, ma == "" ? "-" : ma, mb == "" ? "-" : mb, "-", unit; exit }
				printf "%-14s %14s %14s %8.3f   %s (%s | %s)\n", name, num(ma), num(mb), ma ? mb / ma : 0, unit, list(1), list(2)
			}' "$out/a.txt" "$out/b.txt"
	done
}

{
	echo
	echo "A = $rev_a ($sha_a)"
	echo "B = $rev_b ($sha_b)"
	echo "$rounds rounds, interleaved A,B per benchmark; benchtime $benchtime"
	echo
	summary
} | tee "$out/summary.txt"

if [[ -n $benchstat ]]; then
	# benchstat reads the configuration lines to tell runs apart.
	for side in a b; do
		cat "$work/$side.head" "$out/$side.txt" >"$work/$side.bs"
		cp "$work/$side.bs" "$out/$side.bench"
	done
	echo
	if ! (cd "$out" && $benchstat A=a.bench B=b.bench) >"$out/benchstat.txt" 2>&1; then
		echo "ab.sh: benchstat did not run (see $out/benchstat.txt); the medians above stand alone"
	else
		tee -a "$out/summary.txt" <"$out/benchstat.txt"
	fi
fi
