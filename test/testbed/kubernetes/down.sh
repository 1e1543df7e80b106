#!/usr/bin/env bash
# Stop the Kubernetes control plane started by up.sh: only the process groups
# whose pids up.sh recorded, in reverse start order. The PKI and etcd's data
# are kept (pass --wipe to delete etcd's data, i.e. every object in the cluster).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs kubernetes
tb_stop kwok
tb_stop kube-scheduler kube-controller-manager
tb_stop kube-apiserver
tb_stop etcd
if [ "${1:-}" = "--wipe" ]; then
  rm -rf "$K8S_DIR/etcd-data"
  tb_log "wiped etcd data"
fi
