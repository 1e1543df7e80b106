# shellcheck shell=bash disable=SC2034
# Shared by node/{up,status,down}.sh (sourced after ../lib.sh and
# ../kubernetes/common.sh, never executed): the test bed's real node, a kubelet
# with containerd + runc beside kwok's fake node.
NODE_DIR="$TB_HOME/node"
NODE_NAME=${KUPENSTACK_REAL_NODE:-real-node-0}
# Pods opt in: a toleration for this taint plus a nodeSelector on the label.
NODE_TAINT="kupenstack.test/real=true:NoSchedule"
NODE_LABEL="kupenstack.test/real=true"
# A bridge of our own: its address is the node IP (the kubelet refuses a loopback
# one) and the pods' gateway. Nothing on eth0.
NODE_BRIDGE=ksnode0
NODE_SUBNET=10.89.0.0/24
NODE_IP=10.89.0.1
NODE_CTRD="$NODE_DIR/containerd"
NODE_SOCK="$NODE_CTRD/containerd.sock"
NODE_KUBELET_DIR="$NODE_DIR/kubelet"
NODE_PKI="$NODE_DIR/pki"
NODE_CNI="$NODE_DIR/cni"
# Host sysctls the kubelet writes at start (setupKernelTunables: 0→1, 1→10, 0→1 here;
# panic_on_oops could reboot the shared machine): it gets private copies (node/kubelet.sh).
NODE_KUBELET_SYSCTLS="vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes"
# What up.sh and the test check unchanged: those, and forwarding (a CNI bridge with
# isGateway would turn it on; ours is not a gateway for the CNI plugin).
NODE_SYSCTLS="$NODE_KUBELET_SYSCTLS net/ipv4/ip_forward net/ipv4/conf/all/route_localnet"
# Paths the CRI plugin and the kubelet hard-code (not configurable in containerd
# 1.6 / kubelet 1.35): up.sh records those it had to create, down.sh removes only those.
NODE_HOST_DIRS="/run/containerd /var/lib/cni /var/log/containers /var/log/pods /run/netns"
# The sandbox image, compiled here (build/pause/linux/pause.c of k8s.io/kubernetes) and
# pulled by containerd from the test-bed registry.
NODE_PAUSE_TAG=3.10.1
NODE_PAUSE_IMAGE="127.0.0.1:5050/kupenstack-testbed/pause:$NODE_PAUSE_TAG"
NODE_SERVICES="containerd kubelet provisioner"
# The test bed's loopback ports a pod reaches at 127.0.0.1 as the host does (cni-host-ports.sh):
# Keystone, Nova, Cinder, Placement, Glance, Neutron, Octavia, the registries, Git, the chart repository.
NODE_HOST_PORTS="5000,8774,8776,8778,9292,9696,9876,5050,5051,5052,5053,5060,8180,8190"

node_ctr() { ctr --address "$NODE_SOCK" --namespace k8s.io "$@"; }

# node_sysctls: "name=value" per line, as the host sees them now
node_sysctls() { local s; for s in $NODE_SYSCTLS; do echo "$s=$(cat "/proc/sys/$s")"; done; }

node_ready() {
  [ "$(k8s_kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
