#!/usr/bin/env bash
# Stops the cluster hack/cluster-up.sh started and removes its directory.
#
# Usage: hack/cluster-down.sh
set -euo pipefail

# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pidfile=$CLUSTER_DIR/e2e-cluster.pid

if [[ ! -f $pidfile ]]; then
	log "no cluster running from $CLUSTER_DIR"
	exit 0
fi
pid=$(cat "$pidfile")
if kill -TERM "$pid" 2>/dev/null; then
	# e2e-cluster stops kube-apiserver, then etcd, each within 30s.
	for _ in $(seq 1 700); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "cluster-down: e2e-cluster ($pid) did not exit; see $CLUSTER_DIR/e2e-cluster.log" >&2
		exit 1
	fi
fi
leftover=$(server_pids "$CLUSTER_DIR")
if [[ -n $leftover ]]; then
	echo "cluster-down: servers still running from $CLUSTER_DIR: $leftover" >&2
	exit 1
fi
rm -rf "$CLUSTER_DIR"
log "stopped"
