#!/usr/bin/env bash
# Exit 0 when containerd and the kubelet run (our recorded process groups) and
# the real node is Ready, held by its own kubelet (not kwok).
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/../kubernetes/common.sh"
. "$HERE/common.sh"
tb_dirs node
rc=0
tb_running $NODE_SERVICES || rc=1
if [ $rc = 0 ]; then
  holder=$(k8s_kubectl -n kube-node-lease get lease "$NODE_NAME" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null || true)
  if node_ready && [ "$holder" = "$NODE_NAME" ]; then echo "node $NODE_NAME: Ready (kubelet, $NODE_IP)"
  else echo "node $NODE_NAME: not Ready, or its Lease held by '$holder'"; rc=1; fi
fi
exit $rc
