#!/usr/bin/env bash
# Starts etcd and kube-apiserver on 127.0.0.1 for use by hand, building them
# first if needed, and prints the kubeconfig to use. They run in the
# background until hack/cluster-down.sh. The cluster is the one the e2e tests
# use (e2e/internal/cluster), run by the e2e-cluster command.
#
# Usage: hack/cluster-up.sh; then export KUBECONFIG=$CLUSTER_DIR/kubeconfig
#
# APISERVER_ARGS adds flags to kube-apiserver's command line, separated by
# spaces, each as --name=value. Sharded informers need an alpha gate:
#   APISERVER_ARGS=--feature-gates=ShardedListAndWatch=true hack/cluster-up.sh
# A cluster already running keeps its flags: run hack/cluster-down.sh first.
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(repo_root)
pidfile=$CLUSTER_DIR/e2e-cluster.pid

if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	log "a cluster is already running from $CLUSTER_DIR (APISERVER_ARGS are not applied to it: run hack/cluster-down.sh first)"
	echo "export KUBECONFIG=$CLUSTER_DIR/kubeconfig"
	exit 0
fi

"$root/hack/build-assets.sh"

if [[ -e $CLUSTER_DIR && ! -O $CLUSTER_DIR ]]; then
	echo "cluster-up: $CLUSTER_DIR belongs to another user; set CLUSTER_DIR" >&2
	exit 1
fi
rm -rf "$CLUSTER_DIR"
mkdir -p "$(dirname "$CLUSTER_DIR")"
mkdir -m 700 "$CLUSTER_DIR"
(cd "$root/e2e" && go build -o "$CLUSTER_DIR/e2e-cluster" ./cmd/e2e-cluster)

# setsid: the cluster must not get the terminal's signals (a Ctrl-C in the
# shell that started it); it stops on cluster-down.sh's SIGTERM.
extra=()
for arg in ${APISERVER_ARGS:-}; do
	extra+=("-apiserver-arg=$arg")
done
setsid "$CLUSTER_DIR/e2e-cluster" -assets "$KUBE_ASSETS" -dir "$CLUSTER_DIR" "${extra[@]}" \
	>"$CLUSTER_DIR/e2e-cluster.log" 2>&1 </dev/null &
echo $! >"$pidfile"

log "starting; output in $CLUSTER_DIR/e2e-cluster.log"
while [[ ! -f $CLUSTER_DIR/kubeconfig ]]; do
	if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		echo "cluster-up: the cluster failed to start:" >&2
		cat "$CLUSTER_DIR/e2e-cluster.log" >&2
		exit 1
	fi
	sleep 0.2
done
log "ready"
echo "export KUBECONFIG=$CLUSTER_DIR/kubeconfig"
