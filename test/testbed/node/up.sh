#!/usr/bin/env bash
# Start the test bed's real node beside kwok's fake one: containerd and runc
# from Debian's packages (their own config, root, state and socket under
# $TB_HOME/node, never the machine's defaults), a bridge CNI for pod-network
# pods, a locally compiled pause image pulled from the test-bed registry, and
# a kubelet built at the control plane's version (kubernetes/build.sh). The
# node registers tainted (NODE_TAINT): only pods that tolerate it and select
# it run here; kwok keeps every other pod. Idempotent: running services are reused.
# Needs the kubernetes and registry peers. Why each setting: ../../shared notes
# "real-node.md" (seven obstacles of this machine kind), summarised inline.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/../kubernetes/common.sh"
. "$HERE/common.sh"
t0=$SECONDS
tb_dirs node
chmod 700 "$NODE_DIR"
CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"

k8s_ready || tb_fail node "the Kubernetes peer is not up (bash test/testbed/kubernetes/up.sh first)"
[ "$(tb_http_code http://127.0.0.1:5050/v2/)" = 200 ] || tb_fail node "the registry peer (127.0.0.1:5050) is not up: the node pulls its images there"

# A containerd started with a TMPDIR that is gone (a test run's, deleted when the run ended, before
# lib.sh restored it for peer starts) cannot exec in a container: every exec probe errors and a pod
# with one is never Ready. Its shims carry the same TMPDIR, so the whole node is restarted.
ctrd_pid=$(tb_pid containerd || true)
ctrd_tmp=$([ -n "$ctrd_pid" ] && tr '\0' '\n' < "/proc/$ctrd_pid/environ" 2>/dev/null | sed -n 's/^TMPDIR=//p' || true)
if [ -n "$ctrd_tmp" ] && ! [ -d "$ctrd_tmp" ]; then
  tb_log "node: containerd runs with TMPDIR $ctrd_tmp, which no longer exists (runc cannot exec): restarting the node first"
  bash "$HERE/down.sh" >&2
fi

# --- packages and the kubelet --------------------------------------------------
tb_apt containerd runc containernetworking-plugins iptables iproute2 util-linux jq gcc libc6-dev
if ! [ -x "$K8S_BIN/kubelet" ]; then
  tb_log "node: building the kubelet $K8S_VERSION (or waiting for the running Kubernetes build)"
  flock -u 9 2>/dev/null || true
  bash "$HERE/../kubernetes/build.sh" --wait kubelet 9>&- >/dev/null || tb_fail node "building the kubelet failed (see above)"
  flock -w 1800 9 || tb_fail node "could not take the test-bed lock back after the build"
fi
[ "$("$K8S_BIN/kubelet" --version)" = "Kubernetes $K8S_VERSION" ] || tb_fail node "$K8S_BIN/kubelet is not $K8S_VERSION"

# --- the pause image -------------------------------------------------------------
# No public registry is reachable: compile pause.c from the kubernetes module (the
# kubelet's own sources) statically, make a one-file image, push it to the test bed's.
pause_repo=${NODE_PAUSE_IMAGE#127.0.0.1:5050/}; pause_repo=${pause_repo%:*}
if [ "$(tb_http_code "http://127.0.0.1:5050/v2/$pause_repo/manifests/$NODE_PAUSE_TAG" -H 'Accept: application/vnd.oci.image.manifest.v1+json')" != 200 ]; then
  pause_bin="$CACHE/kubernetes-$K8S_VERSION/pause/pause"
  if ! [ -x "$pause_bin" ]; then
    src="$CACHE/go/mod/k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c"
    [ -f "$src" ] || GOMODCACHE="$CACHE/go/mod" GOTOOLCHAIN=local /usr/local/go/bin/go mod download "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    mkdir -p "${pause_bin%/*}"
    gcc -Os -Wall -Werror -static -DVERSION="v$NODE_PAUSE_TAG-testbed" -o "$pause_bin.tmp" "$src" || tb_fail node "compiling $src failed"
    mv "$pause_bin.tmp" "$pause_bin"
  fi
  (
    . "$HERE/../image/common.sh"
    image_lock; image_tools
    c=$(ib from --quiet scratch)
    trap 'ib rm "$c" >/dev/null 2>&1 || true' EXIT
    ib copy --quiet --chmod 0755 "$c" "$pause_bin" /pause
    ib config --entrypoint '["/pause"]' --user 65535:65535 --label org.opencontainers.image.title=pause "$c"
    ib commit --quiet --rm "$c" "$NODE_PAUSE_IMAGE" >/dev/null
    trap - EXIT
    ib push --quiet --tls-verify=false "$NODE_PAUSE_IMAGE" "docker://$NODE_PAUSE_IMAGE"
  ) >"$LOG_DIR/pause-image.log" 2>&1 || tb_fail pause-image "making or pushing $NODE_PAUSE_IMAGE failed"
  tb_log "node: pushed $NODE_PAUSE_IMAGE (pause.c of k8s.io/kubernetes@$K8S_VERSION)"
fi

# --- host directories the runtime hard-codes -------------------------------------------
touch "$NODE_DIR/created-host-dirs"
for d in $NODE_HOST_DIRS; do
  if ! [ -e "$d" ]; then
    mkdir -p "$d"; echo "$d" >> "$NODE_DIR/created-host-dirs"
  fi
done
sort -u -o "$NODE_DIR/created-host-dirs" "$NODE_DIR/created-host-dirs"
tb_netns_run_dir

# The host's values before our kubelet runs: what it must leave them at.
tb_pid kubelet >/dev/null || node_sysctls > "$NODE_DIR/sysctl.host"

# --- network: our bridge, and two NAT rules in chains of our own ----------------------
# The bridge's address is the node IP and the pods' gateway. The CNI plugin is not
# the gateway (isGateway would switch on the host's ip_forward): we add the address.
if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
  ip link add "$NODE_BRIDGE" type bridge
  ip addr add "$NODE_IP/${NODE_SUBNET#*/}" dev "$NODE_BRIDGE"
fi
ip link set "$NODE_BRIDGE" up
# 127.0.0.1 as a DNAT target for packets from the bridge (this interface only).
echo 1 > "/proc/sys/net/ipv4/conf/$NODE_BRIDGE/route_localnet"
# Obstacle 7: no kube-proxy, and the kubernetes Service has no endpoints (the API
# server advertises 127.0.0.1): 10.96.0.1:443 from a pod goes to 127.0.0.1:6443 (its
# certificate names 10.96.0.1), so the default in-cluster config works unchanged.
iptables -t nat -N KS-NODE-PREROUTING 2>/dev/null || iptables -t nat -F KS-NODE-PREROUTING
iptables -t nat -A KS-NODE-PREROUTING -i "$NODE_BRIDGE" -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination "127.0.0.1:$K8S_API_PORT"
# The test bed's peers listen on the host's loopback: a pod's connection to 127.0.0.1 on
# their ports is sent here by cni-host-ports.sh (in the pod's namespace) and lands on them.
iptables -t nat -A KS-NODE-PREROUTING -i "$NODE_BRIDGE" -d "$NODE_IP/32" -p tcp -m multiport --dports "$NODE_HOST_PORTS" -j DNAT --to-destination 127.0.0.1
iptables -t nat -C PREROUTING -j KS-NODE-PREROUTING 2>/dev/null || iptables -t nat -I PREROUTING -j KS-NODE-PREROUTING
# The kubelet serves anonymously (the API server has no kubelet client certificate):
# only the host may reach it, never a pod or another machine.
iptables -N KS-NODE-INPUT 2>/dev/null || iptables -F KS-NODE-INPUT
iptables -A KS-NODE-INPUT ! -i lo -d "$NODE_IP/32" -p tcp --dport 10250 -j DROP
iptables -C INPUT -j KS-NODE-INPUT 2>/dev/null || iptables -I INPUT -j KS-NODE-INPUT

# Plugins in a directory of our own: Debian's, and ours (copied: the node outlives a worktree).
mkdir -p "$NODE_CNI/net.d" "$NODE_CNI/ipam" "$NODE_CNI/bin"
for p in bridge host-local loopback; do ln -sfn "/usr/lib/cni/$p" "$NODE_CNI/bin/$p"; done
install -m 0755 "$HERE/cni-host-ports.sh" "$NODE_CNI/bin/ks-host-ports"
cat > "$NODE_CNI/net.d/10-ksnode.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "ksnode", "plugins": [
  {"type": "bridge", "bridge": "$NODE_BRIDGE", "isGateway": false, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$NODE_CNI/ipam",
            "ranges": [[{"subnet": "$NODE_SUBNET", "gateway": "$NODE_IP"}]],
            "routes": [{"dst": "0.0.0.0/0", "gw": "$NODE_IP"}]}},
  {"type": "ks-host-ports", "gateway": "$NODE_IP", "ports": "$NODE_HOST_PORTS"}
]}
JSON

# --- containerd ----------------------------------------------------------------------
mkdir -p "$NODE_CTRD/root" "$NODE_CTRD/state" "$NODE_CTRD/opt"
cat > "$NODE_CTRD/config.toml.new" <<TOML
# Generated by test/testbed/node/up.sh: the test bed's containerd, never the machine's default.
version = 2
root = "$NODE_CTRD/root"
state = "$NODE_CTRD/state"
[grpc]
  address = "$NODE_SOCK"
[ttrpc]
  address = "$NODE_SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_CTRD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$NODE_PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  # Obstacle 1: no CAP_SYS_RESOURCE here, so runc cannot lower oom_score_adj (-998 for
  # the sandbox): clamp it to containerd's own.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    # Obstacle 2: hybrid cgroups; runc copes, crun refuses.
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$NODE_CNI/bin"
    conf_dir = "$NODE_CNI/net.d"
    max_conf_num = 1
  # The test bed's registry speaks plain HTTP.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.1:5050"]
    endpoint = ["http://127.0.0.1:5050"]
TOML
if tb_pid containerd >/dev/null && ! cmp -s "$NODE_CTRD/config.toml.new" "$NODE_CTRD/config.toml"; then
  tb_log "node: containerd's config changed: restarting it"
  tb_stop containerd
fi
mv "$NODE_CTRD/config.toml.new" "$NODE_CTRD/config.toml"
tb_start containerd nice -n 5 containerd --config "$NODE_CTRD/config.toml"
i=0
until node_ctr version >/dev/null 2>&1; do
  tb_pid containerd >/dev/null || tb_fail containerd "exited before serving $NODE_SOCK"
  [ $i -ge 120 ] && tb_fail containerd "not serving $NODE_SOCK after 30 s"
  sleep 0.25; i=$((i + 1))
done

# --- the kubelet's identity ------------------------------------------------------------
# A client certificate signed by the plane's CA (O=system:nodes), and system:node's
# rights by RBAC (the API server has no Node authorizer).
if ! [ -s "$NODE_PKI/kubelet-client.crt" ]; then
  rm -rf "$NODE_PKI.new"; mkdir -p "$NODE_PKI.new"
  (
    cd "$NODE_PKI.new"; umask 077
    printf '%s\n' 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=clientAuth' > client.ext
    openssl req -newkey rsa:2048 -nodes -keyout kubelet-client.key -out kubelet-client.csr -subj "/O=system:nodes/CN=system:node:$NODE_NAME"
    openssl x509 -req -in kubelet-client.csr -CA "$K8S_PKI/ca.crt" -CAkey "$K8S_PKI/ca.key" -CAcreateserial -CAserial "$NODE_PKI.new/ca.srl" -days 3650 -out kubelet-client.crt -extfile client.ext
    rm -f kubelet-client.csr
  ) >"$LOG_DIR/pki.log" 2>&1 || tb_fail pki "openssl failed"
  rm -rf "$NODE_PKI"; mv "$NODE_PKI.new" "$NODE_PKI"
fi
umask 077
cat > "$NODE_DIR/kubelet.kubeconfig" <<EOF2
apiVersion: v1
kind: Config
clusters:
- name: kupenstack-testbed
  cluster: {server: "https://127.0.0.1:$K8S_API_PORT", certificate-authority: "$K8S_PKI/ca.crt"}
users:
- name: kubelet
  user: {client-certificate: "$NODE_PKI/kubelet-client.crt", client-key: "$NODE_PKI/kubelet-client.key"}
contexts:
- name: kubelet
  context: {cluster: kupenstack-testbed, user: kubelet}
current-context: kubelet
EOF2
umask 022
k8s_kubectl apply --server-side --field-manager=kupenstack-testbed -f - >/dev/null <<EOF2 || tb_fail node "could not bind system:node to system:node:$NODE_NAME"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "kupenstack-testbed:node:$NODE_NAME"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:node"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:node:$NODE_NAME"}]
EOF2

# --- the kubelet -------------------------------------------------------------------------
mkdir -p "$NODE_KUBELET_DIR" "$NODE_DIR/pod-logs" "$NODE_DIR/sysctl-copies"
cat > "$NODE_DIR/kubelet-config.yaml" <<EOF2
# Generated by test/testbed/node/up.sh.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# Obstacle 6: a non-loopback node IP, or the API server cannot reach logs/exec;
# KS-NODE-INPUT keeps it host-only.
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# The API server calls the kubelet without a client certificate.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}, x509: {clientCAFile: "$K8S_PKI/ca.crt"}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
# Obstacle 3: the machine's cgroups are v1 (hybrid); 1.35 refuses them by default.
failCgroupV1: false
# Obstacle 4: the sysctls it writes go to private copies (kubelet.sh).
protectKernelDefaults: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://$NODE_SOCK
imageServiceEndpoint: unix://$NODE_SOCK
podLogsDir: $NODE_DIR/pod-logs
volumePluginDir: $NODE_KUBELET_DIR/volume-plugins
registerWithTaints: [{key: "${NODE_TAINT%%=*}", value: "$(v=${NODE_TAINT#*=}; echo "${v%%:*}")", effect: "${NODE_TAINT##*:}"}]
nodeLeaseDurationSeconds: 40
maxPods: 30
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
EOF2

if ! tb_pid kubelet >/dev/null; then
  # Obstacle 5: kwok (--manage-all-nodes) plays every node whose Lease it can take;
  # a Lease held by the node's own name before it registers keeps kwok off it.
  k8s_kubectl -n kube-node-lease apply --server-side --force-conflicts --field-manager=kupenstack-testbed -f - >/dev/null <<EOF2 || tb_fail node "could not create the Lease of $NODE_NAME"
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: "$NODE_NAME", namespace: kube-node-lease}
spec: {holderIdentity: "$NODE_NAME", leaseDurationSeconds: 40, renewTime: "$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)"}
EOF2
  # Mounts the kubelet makes in its own namespace under its root dir (secret and
  # projected volumes) must reach containerd's: a shared mount, made before the unshare.
  mountpoint -q "$NODE_KUBELET_DIR" || mount --bind "$NODE_KUBELET_DIR" "$NODE_KUBELET_DIR"
  mount --make-shared "$NODE_KUBELET_DIR"
  tb_start kubelet nice -n 5 unshare -m --propagation unchanged bash "$HERE/kubelet.sh" "$NODE_DIR/sysctl-copies" "$NODE_KUBELET_SYSCTLS" \
    "$K8S_BIN/kubelet" --config="$NODE_DIR/kubelet-config.yaml" --kubeconfig="$NODE_DIR/kubelet.kubeconfig" \
    --root-dir="$NODE_KUBELET_DIR" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --node-labels="$NODE_LABEL" --v=1
fi
i=0
until node_ready; do
  tb_pid kubelet >/dev/null || tb_fail kubelet "exited before node $NODE_NAME was Ready"
  [ $i -ge 240 ] && tb_fail kubelet "node $NODE_NAME not Ready after 60 s"
  sleep 0.25; i=$((i + 1))
done
# Volumes for claims of class kupenstack-testbed-local on this node (provisioner.sh).
k8s_kubectl apply --server-side --field-manager=kupenstack-testbed -f - >/dev/null <<EOF2 || tb_fail node "could not create StorageClass kupenstack-testbed-local"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: kupenstack-testbed-local}
provisioner: kupenstack.test/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF2
tb_start provisioner nice -n 5 bash "$HERE/provisioner.sh" "$K8S_BIN/kubectl" "$K8S_KUBECONFIG" "$NODE_DIR/volumes" "$NODE_NAME"
# kwok must not have taken the node: its Lease is the kubelet's.
holder=$(k8s_kubectl -n kube-node-lease get lease "$NODE_NAME" -o 'jsonpath={.spec.holderIdentity}')
[ "$holder" = "$NODE_NAME" ] || tb_fail kubelet "the Lease of $NODE_NAME is held by '$holder', not the kubelet"
now=$(node_sysctls)
[ "$now" = "$(cat "$NODE_DIR/sysctl.host")" ] || tb_fail kubelet "host sysctls changed: before $(tr '\n' ' ' < "$NODE_DIR/sysctl.host"), now $(echo "$now" | tr '\n' ' ')"
tb_log "node $NODE_NAME Ready in $((SECONDS - t0)) s (kubelet $K8S_VERSION, containerd $(containerd --version | awk '{print $3}'), node IP $NODE_IP, taint $NODE_TAINT)"
