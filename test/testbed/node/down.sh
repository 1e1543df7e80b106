#!/usr/bin/env bash
# Stop the real node started by up.sh and leave the host as found: its pods
# are stopped through the kubelet (so the CNI plugin releases their network
# namespaces and addresses), then the kubelet, the Node object (at once, or
# kwok takes it over when the kubelet's 40 s Lease lapses), what is left in
# containerd, containerd; then our iptables chains, the bridge, the mounts
# under the kubelet's root dir, and the host directories up.sh created.
# Only what this test bed started or made is touched.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/../kubernetes/common.sh"
. "$HERE/common.sh"
tb_dirs node

api=0; k8s_ready && api=1
if [ $api = 1 ] && tb_pid kubelet >/dev/null && k8s_kubectl get node "$NODE_NAME" >/dev/null 2>&1; then
  k8s_kubectl cordon "$NODE_NAME" >/dev/null 2>&1
  # Graceful: the kubelet stops each pod's containers and sandbox (CNI DEL).
  k8s_kubectl delete pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" --grace-period=10 --wait=false >/dev/null 2>&1
  for _ in $(seq 1 60); do
    [ -z "$(k8s_kubectl get pods --all-namespaces --field-selector "spec.nodeName=$NODE_NAME" -o name 2>/dev/null)" ] && break
    sleep 1
  done
  # Sandboxes are stopped once their pods are gone; wait for none to run.
  for _ in $(seq 1 30); do
    [ -z "$(node_ctr tasks ls -q 2>/dev/null)" ] && break
    sleep 1
  done
fi
tb_stop provisioner kubelet
if [ $api = 1 ]; then
  k8s_kubectl delete node "$NODE_NAME" --ignore-not-found --wait=false >/dev/null 2>&1 || tb_log "node: could not delete Node $NODE_NAME"
  k8s_kubectl -n kube-node-lease delete lease "$NODE_NAME" --ignore-not-found >/dev/null 2>&1
fi
# A namespace's file can hold more than one mount (the CRI's bind propagated back onto itself,
# seen as "unlinkat …: device or resource busy" in StopPodSandbox): unmount until none is left.
release_netns() {
  local i
  for i in $(seq 1 20); do
    grep -q " ${1#/var} " /proc/self/mountinfo || break
    umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
  done
  rm -f "$1" || tb_log "node: could not remove $1"
}
if tb_pid containerd >/dev/null; then
  # What the kubelet did not stop (it was killed, or the API was down): kill the tasks,
  # release their network namespaces the way the CRI made them (bind mounts in /run/netns).
  for t in $(node_ctr tasks ls -q 2>/dev/null); do node_ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  sleep 1
  for c in $(node_ctr containers ls -q 2>/dev/null); do
    ns=$(node_ctr containers info "$c" 2>/dev/null | sed -n 's|.*"path": "\(/var/run/netns/cni-[0-9a-f-]*\)".*|\1|p' | head -n1)
    node_ctr tasks delete -f "$c" >/dev/null 2>&1
    node_ctr containers delete "$c" >/dev/null 2>&1
    [ -n "$ns" ] && release_netns "$ns"
  done
fi
tb_stop containerd

iptables -t nat -D PREROUTING -j KS-NODE-PREROUTING 2>/dev/null
iptables -t nat -F KS-NODE-PREROUTING 2>/dev/null && iptables -t nat -X KS-NODE-PREROUTING 2>/dev/null
iptables -D INPUT -j KS-NODE-INPUT 2>/dev/null
iptables -F KS-NODE-INPUT 2>/dev/null && iptables -X KS-NODE-INPUT 2>/dev/null
ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && ip link delete "$NODE_BRIDGE"
# Leftover veths of pods the CNI plugin never saw deleted went with their namespaces.
rm -rf "$NODE_CNI/ipam"

# Secret/projected tmpfs left under the kubelet's root dir, deepest first, then the bind itself;
# and the sandboxes' /dev/shm under containerd's state (the CRI unmounts them only when it removes a sandbox).
for d in "$NODE_KUBELET_DIR" "$NODE_CTRD"; do
  [ -d "$d" ] || continue
  findmnt -rn -o TARGET | grep -E "^$d(/|$)" | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
done
# The cgroups containerd made (cgroupfs driver, parent /k8s.io), empty once the tasks are gone.
for h in /sys/fs/cgroup/*/k8s.io; do
  [ -d "$h" ] || continue
  find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
done
if [ -f "$NODE_DIR/created-host-dirs" ]; then
  while read -r d; do
    [ -n "$d" ] || continue
    case "$d" in /run/containerd|/var/lib/cni|/var/log/containers|/var/log/pods|/run/netns) ;; *) continue ;; esac
    if mountpoint -q "$d"; then umount "$d" 2>/dev/null; fi
    rm -rf "$d"
  done < "$NODE_DIR/created-host-dirs"
  rm -f "$NODE_DIR/created-host-dirs"
fi
exit 0
