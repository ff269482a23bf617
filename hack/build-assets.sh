#!/usr/bin/env bash
# Builds kube-apiserver and etcd from source through the Go module proxy into
# $KUBE_ASSETS (see lib.sh), or reuses them when a binary of the wanted version
# is already there. Prebuilt release binaries cannot be downloaded on our
# machines, but Go modules can, so each binary is built from a small wrapper
# module generated in a temporary directory.
#
# Usage: hack/build-assets.sh        (prints nothing on stdout; logs to stderr)
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p "$KUBE_ASSETS"

# BUILD_NICENESS lowers the builds' priority (nice -n N) when set. The default
# is normal priority: at nice 10 a first build on a busy 2-core machine took
# 32 minutes instead of 12, starved by everything else running.
BUILD_NICE=
if [[ -n ${BUILD_NICENESS:-} ]]; then
	BUILD_NICE="nice -n $BUILD_NICENESS"
fi

# Two runs at once (a developer and CI, or two terminals) would build the same
# binaries twice; a lock on the cache directory makes the second wait and then
# reuse the first one's result.
if command -v flock >/dev/null; then
	exec 9>"$KUBE_ASSETS/.lock"
	flock 9
fi

workdir=$(mktemp -d)
trap 'chmod -R u+w "$workdir" 2>/dev/null; rm -rf "$workdir"' EXIT

# up_to_date NAME VERSION succeeds when $KUBE_ASSETS/NAME exists and was built
# for VERSION (recorded in NAME.version by install_binary).
up_to_date() {
	[[ -x "$KUBE_ASSETS/$1" && -f "$KUBE_ASSETS/$1.version" &&
		"$(cat "$KUBE_ASSETS/$1.version")" == "$2" ]]
}

# install_binary NAME VERSION SRC moves a freshly built binary into the cache.
# The rename is atomic, so an interrupted build never leaves a truncated
# binary that a later run would take for a good one.
install_binary() {
	mv "$3" "$KUBE_ASSETS/$1.tmp"
	mv "$KUBE_ASSETS/$1.tmp" "$KUBE_ASSETS/$1"
	printf '%s\n' "$2" >"$KUBE_ASSETS/$1.version"
}

build_etcd() {
	local dir=$workdir/etcd
	mkdir -p "$dir"
	cat >"$dir/main.go" <<'GO'
// Command etcd runs etcd's own entry point; it exists because `go install` of
// the etcd server module fails on that module's replace directives.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
	(
		cd "$dir"
		go mod init kubetyped.invalid/etcd >/dev/null 2>&1
		go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
		go mod tidy
		CGO_ENABLED=0 $BUILD_NICE go build -trimpath -ldflags='-s -w' -o etcd .
	)
	install_binary etcd "$ETCD_VERSION" "$dir/etcd"
}

build_kube_apiserver() {
	local dir=$workdir/kube-apiserver
	mkdir -p "$dir"
	cat >"$dir/main.go" <<'GO'
// Command kube-apiserver runs the Kubernetes API server's own command.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
GO
	# k8s.io/kubernetes points every staging module (k8s.io/api, k8s.io/apiserver,
	# ...) at ./staging/src with replace directives, which do not apply to a
	# dependency. Our wrapper replaces each of them with the module published
	# for the same release instead: v1.M.P of kubernetes ships v0.M.P staging
	# modules.
	local staging_version=v0.${KUBE_VERSION#v1.}
	local gomod
	gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
		sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
	if [[ ! -f "$gomod" ]]; then
		echo "build-assets: could not download the go.mod of k8s.io/kubernetes@$KUBE_VERSION" >&2
		exit 1
	fi
	local staging
	staging=$(sed -n 's|^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*$|\1|p' "$gomod")
	if [[ -z "$staging" ]]; then
		echo "build-assets: found no staging replace directives in $gomod" >&2
		exit 1
	fi
	(
		cd "$dir"
		go mod init kubetyped.invalid/kube-apiserver >/dev/null 2>&1
		go mod edit -require="k8s.io/kubernetes@$KUBE_VERSION"
		local m
		for m in $staging; do
			go mod edit -replace="$m=$m@$staging_version"
		done
		go mod tidy
		local minor=${KUBE_VERSION#v1.}
		minor=${minor%%.*}
		# component-base's version must be set: the server refuses to start
		# (it panics parsing its own version) with the default v0.0.0-master.
		local pkg=k8s.io/component-base/version
		CGO_ENABLED=0 $BUILD_NICE go build -trimpath \
			-ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
			-o kube-apiserver .
	)
	install_binary kube-apiserver "$KUBE_VERSION" "$dir/kube-apiserver"
}

if up_to_date etcd "$ETCD_VERSION"; then
	log "reusing $KUBE_ASSETS/etcd ($ETCD_VERSION)"
else
	log "building etcd $ETCD_VERSION (1-3 minutes on a cold cache)"
	start=$SECONDS
	build_etcd
	log "built etcd in $((SECONDS - start))s"
fi

if up_to_date kube-apiserver "$KUBE_VERSION"; then
	log "reusing $KUBE_ASSETS/kube-apiserver ($KUBE_VERSION)"
else
	log "building kube-apiserver $KUBE_VERSION (10-15 minutes on a cold 2-core machine, more under load)"
	start=$SECONDS
	build_kube_apiserver
	log "built kube-apiserver in $((SECONDS - start))s"
fi
