# shellcheck shell=bash
# Shared settings for the hack/ scripts. Source it; it defines variables and
# functions only and has no side effects.

# Versions of the servers the e2e suite runs against. KUBE_VERSION is the
# k8s.io/kubernetes module version; its staging modules (k8s.io/api, ...) are
# published as v0.<minor>.<patch> of the same release. v1.37.1 rather than
# v1.37.2 (our client-go) because the proxy refuses the v1.37.2 module zip.
KUBE_VERSION=${KUBE_VERSION:-v1.37.1}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}

# KUBE_ASSETS is the directory holding the built kube-apiserver and etcd
# binaries. It is keyed by the Kubernetes version so a version bump builds anew
# instead of reusing stale binaries.
KUBE_ASSETS=${KUBE_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/kubetyped-informer/kube-${KUBE_VERSION}}
export KUBE_VERSION ETCD_VERSION KUBE_ASSETS

# log prints a timestamped message to stderr, so scripts whose stdout is
# captured still show progress.
log() {
	printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

# repo_root prints the absolute path of the repository.
repo_root() {
	cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd
}

# server_pids DIR prints the ids of running processes whose command line
# mentions DIR: the servers started with their data in DIR. It reads /proc
# directly so that it needs no procps.
server_pids() {
	local dir=$1 file pid args
	for file in /proc/[0-9]*/cmdline; do
		pid=${file#/proc/}
		pid=${pid%/cmdline}
		args=$(tr '\0' ' ' 2>/dev/null <"$file") || continue
		if [[ $args == *"$dir"* ]]; then
			printf '%s\n' "$pid"
		fi
	done
}

# CLUSTER_DIR is where cluster-up.sh runs a cluster for use by hand: data,
# logs, the kubeconfig and the pid file. The default is per user, so that
# users of one machine neither share a cluster nor trip over each other's
# directory: under XDG_RUNTIME_DIR (private to the user) when it is set, else
# under TMPDIR or /tmp with the user id in the name (cluster-up.sh refuses a
# directory it does not own).
CLUSTER_DIR=${CLUSTER_DIR:-${XDG_RUNTIME_DIR:-${TMPDIR:-/tmp}}/kubetyped-informer-cluster-$(id -u)}
