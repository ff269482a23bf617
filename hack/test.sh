#!/usr/bin/env bash
# Runs the unit tests of every Go module of the repository that ships: the
# core (the root), crcache/ and metrics/prometheus/, each its own module, so
# that `go test ./...` at the root does not reach them. e2e/ is left out: it
# needs a real etcd and kube-apiserver (hack/e2e.sh runs it).
#
# Usage: hack/test.sh [go test flags...]
#   default flags: -race -timeout 45m; the arguments follow them, e.g.
#   hack/test.sh -count=1. The timeout: the root package's race tests take
#   about 2 minutes on a quiet 2-core machine and 16 at load average 25, past
#   go test's default of 10 minutes per package.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(repo_root)

status=0
while IFS= read -r gomod; do
	dir=$(dirname "$gomod")
	[[ $dir == ./e2e ]] && continue
	start=$SECONDS
	(cd "$root/$dir" && go test -race -timeout 45m "$@" ./...) || status=1
	log "tests of module $dir took $((SECONDS - start))s"
done < <(cd "$root" && find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' | sort)
exit "$status"
