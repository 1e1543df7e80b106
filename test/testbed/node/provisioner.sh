#!/usr/bin/env bash
# The test bed's volume provisioner for the real node: StorageClass
# "kupenstack-testbed-local" (provisioner kupenstack.test/local-path,
# WaitForFirstConsumer). A claim of that class whose pod the scheduler placed
# on the real node gets a `local` PersistentVolume in a directory of its own
# under $TB_HOME/node/volumes, bound to it; when the claim is deleted, the
# volume and its directory go too (reclaim policy Delete). A loop over kubectl,
# started by up.sh as a service like the others.
#   provisioner.sh KUBECTL KUBECONFIG VOLUMES_DIR NODE_NAME
set -uo pipefail
kubectl=$1 kubeconfig=$2 dir=$3 node=$4
k() { "$kubectl" --kubeconfig="$kubeconfig" "$@"; }
class=kupenstack-testbed-local
mkdir -p "$dir"
while true; do
  # Claims waiting for us: our class, a node chosen, no volume yet.
  k get pvc --all-namespaces -o jsonpath='{range .items[?(@.spec.storageClassName=="'"$class"'")]}{.metadata.namespace}{"|"}{.metadata.name}{"|"}{.metadata.uid}{"|"}{.spec.volumeName}{"|"}{.metadata.annotations.volume\.kubernetes\.io/selected-node}{"|"}{.spec.resources.requests.storage}{"\n"}{end}' 2>/dev/null |
  # "|"-separated: an empty field (no volume yet) must stay a field.
  while IFS='|' read -r ns name uid volume selected size; do
    [ -z "$volume" ] && [ "$selected" = "$node" ] || continue
    pv="ks-local-${uid}"
    mkdir -p "$dir/$pv" && chmod 0777 "$dir/$pv"
    k apply -f - >/dev/null <<YAML && echo "provisioned $pv for $ns/$name ($size) in $dir/$pv"
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $pv
  annotations: {pv.kubernetes.io/provisioned-by: kupenstack.test/local-path}
spec:
  capacity: {storage: $size}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: $class
  claimRef: {namespace: $ns, name: $name, uid: $uid}
  local: {path: $dir/$pv}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$node]}]}]
YAML
  done
  # Volumes whose claim is gone: deleted with their directory.
  k get pv -o jsonpath='{range .items[?(@.spec.storageClassName=="'"$class"'")]}{.metadata.name}{" "}{.status.phase}{"\n"}{end}' 2>/dev/null |
  while read -r pv phase; do
    [ "$phase" = Released ] || [ "$phase" = Failed ] || continue
    k delete pv "$pv" --wait=false >/dev/null && rm -rf "${dir:?}/$pv" && echo "deleted $pv and its directory"
  done
  sleep 2
done
