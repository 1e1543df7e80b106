# shellcheck shell=bash disable=SC2034
# Shared by kubernetes/{up,status,down}.sh (sourced after ../lib.sh, never executed).
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
K8S_DIR="$TB_HOME/kubernetes"
K8S_PKI="$K8S_DIR/pki"
# The fixed path tests, the controller and kubectl use (cluster-admin, client certificate).
K8S_KUBECONFIG="$K8S_DIR/admin.kubeconfig"
ETCD_PORT=12379          # etcd client, http, loopback
ETCD_PEER_PORT=12380
K8S_API_PORT=6443        # kube-apiserver, https
KCM_PORT=10257
SCHED_PORT=10259
K8S_SERVICES="etcd kube-apiserver kube-controller-manager kube-scheduler kwok"
K8S_NODE=kwok-node-0
K8S_BIN="$(bash "$(dirname "${BASH_SOURCE[0]}")/build.sh" --dir)"

k8s_kubectl() { "$K8S_BIN/kubectl" --kubeconfig="$K8S_KUBECONFIG" "$@"; }

# k8s_ready: the API server answers /readyz with its CA verified
k8s_ready() {
  [ "$(curl -s -m 3 -o /dev/null -w '%{http_code}' --cacert "$K8S_PKI/ca.crt" "https://127.0.0.1:$K8S_API_PORT/readyz" || true)" = 200 ]
}
