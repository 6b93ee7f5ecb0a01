#!/usr/bin/env bash
# Makes the command-line tool (cmd/redelay, its own module) require the
# library at a commit of this repository: the pseudo-version `go get`
# would name it by (v0.0.0-yyyymmddhhmmss-abcdefabcdef, or its tag), with
# go.sum's hashes of that commit's module zip and go.mod. That require,
# and no replace directive, is what `go install
# github.com/redelay/redelay/cmd/redelay@latest` needs; development builds
# the tool against the checkout's library all the same, through
# cmd/redelay/go.work.
#
# Run it after committing a change to the library that the tool needs,
# then commit cmd/redelay/go.mod and go.sum:
#
#   ./scripts/pin-library.sh          # the newest commit that changed the library
#   ./scripts/pin-library.sh REV      # a given commit: HEAD or one of its ancestors
#
# The pinned commit must be on main's history: users fetch it from there.
# The program is cmd/redelay/internal/pinlibrary (golang.org/x/mod stays
# out of the library's go.mod); it needs the full history (no shallow
# clone) and the Go module proxy for any dependency not yet in the module
# cache.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../cmd/redelay"
# The workspace builds it even where GOWORK is set otherwise: outside it
# the go command would look for the pinned library on the module proxy.
GOWORK=$PWD/go.work exec go run ./internal/pinlibrary "$@"
