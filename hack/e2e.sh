#!/usr/bin/env bash
# Runs the end-to-end suite (e2e/, its own Go module) against a real etcd and
# kube-apiserver: builds them first if $KUBE_ASSETS does not have them yet
# (see build-assets.sh), then runs `go test` in e2e/, whose TestMain starts
# and stops the servers. Afterwards it checks that no server outlived the
# tests.
#
# Usage: hack/e2e.sh [go test flags...]
#   default flags: -race -count=1 -timeout=30m (the suite takes several
#   minutes, past go test's 10-minute default when a test hangs); E2E_RACE=0 drops -race.
#   e.g. hack/e2e.sh -run Controller -v
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(repo_root)

"$root/hack/build-assets.sh"

# The servers keep their data and logs here; knowing the directory lets us
# find any server the tests failed to stop.
E2E_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kubetyped-e2e.XXXXXX")
export E2E_CLUSTER_DIR

flags=(-count=1 -timeout=30m)
if [[ ${E2E_RACE:-1} != 0 ]]; then
	flags+=(-race)
fi

status=0
start=$SECONDS
(cd "$root/e2e" && go test "${flags[@]}" "$@" ./...) || status=$?
log "e2e suite took $((SECONDS - start))s"

leftover=$(server_pids "$E2E_CLUSTER_DIR")
if [[ -n $leftover ]]; then
	echo "e2e: servers outlived the tests (a bug in the harness); killing them:" >&2
	for pid in $leftover; do
		args=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || true
		echo "  $pid: $args" >&2
		kill -KILL "$pid" 2>/dev/null || true
	done
	status=1
fi

if [[ $status == 0 ]]; then
	rm -rf "$E2E_CLUSTER_DIR"
else
	echo "e2e: failed; server data and logs are in $E2E_CLUSTER_DIR" >&2
fi
exit "$status"
