#!/usr/bin/env bash
# Exit 0 when the control plane runs (our recorded process groups), the API
# server is ready and the fake node is Ready.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs kubernetes
rc=0
tb_running $K8S_SERVICES || rc=1
if k8s_ready; then echo "kube-apiserver: ready on https://127.0.0.1:$K8S_API_PORT (KUBECONFIG=$K8S_KUBECONFIG)"
else echo "kube-apiserver: https://127.0.0.1:$K8S_API_PORT/readyz not ok"; rc=1; fi
if [ $rc = 0 ]; then
  ready=$(k8s_kubectl get node "$K8S_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  [ "$ready" = True ] && echo "node $K8S_NODE: Ready" || { echo "node $K8S_NODE: not Ready ($ready)"; rc=1; }
fi
exit $rc
