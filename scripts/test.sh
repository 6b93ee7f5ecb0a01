#!/usr/bin/env bash
# Runs the whole test suite: installs redis-server and redis-cli when they
# are missing (the tests start their own servers on loopback ports; the
# distribution's redis service is neither needed nor used), checks
# formatting and go vet, then runs every test with the race detector.
# Without arguments it also tests, beside those, the command-line tool
# (cmd/redelay, its own module), whose tests drive the dashboard in
# headless Chromium
# (Debian's chromium package, installed like Redis when missing), and
# installs it as a user does (the README's go install line, against the
# library at the commit cmd/redelay/go.mod pins), and runs
# the side-by-side benchmark (bench/, its own module) as a smoke test: its
# tests, and the smoke run (every workload and contestant at tiny sizes,
# about a minute), which fails on any lost or duplicated item or
# failed workload and asserts nothing about speed (it needs Node.js and npm
# for BullMQ, installed like Redis when missing), and tests deploy/ (its
# own module): the Grafana dashboard's and the alerting rules' queries
# against a live scrape, and the rules with promtool (Debian's prometheus
# package, installed without its recommends when missing; its service is
# neither started by the tests nor needed).
#
# It also installs Debian's python3-redis, python3-pytest and python3-pip
# when missing, and runs the Python and Node producers' tests
# (clients/python with pytest, a pip install of it included;
# clients/node with node's test runner, after npm ci); the library's
# tests run both producers against Go consumers.
#
# Extra arguments go to `go test` of the library only, e.g.
# ./scripts/test.sh -run TestFoo -v
set -euo pipefail

redis_server=${REDIS_SERVER:-redis-server}
redis_cli=${REDIS_CLI:-redis-cli}

missing=()
if ! command -v "$redis_server" >/dev/null 2>&1 || ! command -v "$redis_cli" >/dev/null 2>&1; then
	missing+=(redis-server redis-tools)
fi
# Node.js runs BullMQ in the benchmark's smoke run and the Node producer
# (clients/node) in the library's cross-language tests.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	missing+=(nodejs npm)
fi
if (($# == 0)) && ! command -v chromium >/dev/null 2>&1; then
	missing+=(chromium)
fi
# The cross-language tests run the Python producer (clients/python) on
# Debian's python3 with its redis-py; its own tests use pytest.
if ! /usr/bin/python3 -c 'import redis' >/dev/null 2>&1; then
	missing+=(python3-redis)
fi
if (($# == 0)) && ! /usr/bin/python3 -c 'import pytest' >/dev/null 2>&1; then
	missing+=(python3-pytest)
fi
# pip (with setuptools) installs the Python producer from the repository
# in its install test, offline. (Each is imported alone: Debian's
# setuptools refuses to load after pip has loaded distutils.)
if (($# == 0)) && ! { /usr/bin/python3 -c 'import pip' && /usr/bin/python3 -c 'import setuptools'; } >/dev/null 2>&1; then
	missing+=(python3-pip python3-setuptools)
fi
# The race detector needs cgo, hence a C compiler.
if ! command -v "$(go env CC)" >/dev/null 2>&1; then
	missing+=(gcc)
fi
# Only promtool is used: without its recommends the package does not
# bring a node exporter along.
missing_norec=()
if (($# == 0)) && ! command -v promtool >/dev/null 2>&1; then
	missing_norec+=(prometheus)
fi
if ((${#missing[@]} + ${#missing_norec[@]} > 0)); then
	if [[ $(id -u) -eq 0 ]]; then
		as_root=()
	elif command -v sudo >/dev/null 2>&1; then
		as_root=(sudo)
	else
		echo "test.sh: need to install ${missing[*]} ${missing_norec[*]} but am not root and sudo is missing" >&2
		exit 1
	fi
	echo "test.sh: installing ${missing[*]} ${missing_norec[*]}" >&2
	"${as_root[@]}" apt-get update
	if ((${#missing[@]} > 0)); then
		"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
	fi
	if ((${#missing_norec[@]} > 0)); then
		"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing_norec[@]}"
	fi
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."

go version
"$redis_server" --version
"$redis_cli" --version
if (($# == 0)); then
	promtool --version 2>&1 | sed -n 1p
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	unformatted=$(git ls-files -z -- '*.go' | xargs -0 -r gofmt -l)
else
	unformatted=$(find . -name '*.go' -not -path './vendor/*' -print0 | xargs -0 -r gofmt -l)
fi
if [[ -n $unformatted ]]; then
	echo "test.sh: these files need gofmt:" >&2
	echo "$unformatted" >&2
	exit 1
fi

go vet ./...
# examples/tracing is a module of its own (its exporters stay out of
# redelay's go.mod), which ./... does not reach. (-o /dev/null: go build
# would leave the example's binary in the tree.)
(cd examples/tracing && go vet ./... && go build -o /dev/null ./...)
# The Node producer's dependencies (ioredis), for the cross-language tests.
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error)

# Background steps, their logs printed when they are waited for; killed
# if the script exits first.
bg_pids=()
bg_logs=()
trap 'for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -f "${bg_logs[@]}"' EXIT
# await PID LOG WHAT waits for a background step, prints its log, and
# exits with the step's status when it failed.
await() {
	local rc=0
	wait "$1" || rc=$?
	cat "$2"
	if ((rc != 0)); then
		echo "test.sh: $3 failed" >&2
		exit "$rc"
	fi
}
install_tests='^(TestInstall|TestGoCommandFetchesTheSame)$'
if (($# == 0)); then
	# Three steps run beside the library's tests, each in the background
	# with its output printed when it is awaited at the end. The suite is
	# bound by CPU with the race detector on, so only steps that mostly
	# wait belong here, or one whose work must come from a cold cache.
	#
	# The tool's tests: like the library's, they spend most of their time
	# waiting on Redis and timers. The tool builds against this
	# checkout's library through cmd/redelay/go.work.
	cli_log=$(mktemp)
	bg_logs+=("$cli_log")
	(
		cd cmd/redelay
		go vet ./...
		go test -race -count=1 -timeout 10m -skip "$install_tests" ./...
	) >"$cli_log" 2>&1 &
	cli_pid=$!
	bg_pids+=("$cli_pid")
	# The README's install line against the modules as committed: the
	# library at the commit go.mod pins, the tool at HEAD. It compiles
	# the tool and its dependencies from an empty module cache, as a
	# user's first go install does, and needs the whole history (no
	# shallow clone) and the Go module proxy.
	# A shallow checkout (a CI's default depth of 1) lacks the pinned
	# commit: fetch the rest of the history when the remote can give it;
	# when it cannot, the test says what is missing.
	if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
		echo "test.sh: a shallow clone: fetching the whole history for the install test" >&2
		git fetch --quiet --unshallow || echo "test.sh: could not fetch the whole history" >&2
	fi
	install_log=$(mktemp)
	bg_logs+=("$install_log")
	(cd cmd/redelay && go test -count=1 -timeout 10m -run "$install_tests" ./internal/modpin) >"$install_log" 2>&1 &
	install_pid=$!
	bg_pids+=("$install_pid")
	# The benchmark's tests and smoke run, which mostly wait on timers
	# and on the contestants' servers (a quarter of a core).
	bench_log=$(mktemp)
	bg_logs+=("$bench_log")
	(
		cd bench
		go vet ./...
		go test -count=1 -timeout 10m ./...
		out=$(mktemp -d)
		trap 'rm -rf "$out"' EXIT
		go run . -smoke -out "$out"
	) >"$bench_log" 2>&1 &
	bench_pid=$!
	bg_pids+=("$bench_pid")
fi

# The longest packages first: go test starts packages in the order they
# are named, two at a time on two cores, and a long one started last
# would run alone at the end.
go test -race -count=1 -timeout 15m "$@" ./blocking ./internal/systemtest ./delayed ./...

if (($# == 0)); then
	# The Python producer's own tests (a redis-server of their own).
	(cd clients/python && PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -q -p no:cacheprovider tests)
	# The Node producer's own tests.
	(cd clients/node && npm test --silent)
	(
		# No race detector: the test checks files against a scrape; the
		# library's races are the suite's above.
		cd deploy
		go vet ./...
		go test -count=1 -timeout 5m ./...
	)
	await "$cli_pid" "$cli_log" "the tool's tests (cmd/redelay)"
	await "$bench_pid" "$bench_log" "the benchmark's tests and smoke run (bench)"
	await "$install_pid" "$install_log" "the install test (cmd/redelay/internal/modpin)"
fi
