#!/usr/bin/env bash
# `npm run demo`, the README's main job: bring up the local cloud, the registry,
# the Git server and the Kubernetes control plane, seed a Git repository from
# repo-template, and show it become the cloud:
#   npm run demo                   in-cluster: KupenStack as real pods (the image built here,
#                                  helm install of the chart, 2 replicas on the test bed's real
#                                  node) makes the repository's manifests custom resources, then
#                                  OpenStack objects; prints kubectl get pods beside the cloud
#   npm run demo -- --foreground   the fallback: the controller runs in this terminal, as in a pod
#                                  (from the image when built, else the sources)
#   npm run demo -- --standalone   `kupenstack agent` against the repository, no cluster
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=cluster
fg=()
for arg in "$@"; do
  case "$arg" in
    --standalone) mode=standalone ;;
    --cluster) mode=cluster ;;
    --foreground) fg=(--foreground) ;;
    *) echo "demo: unknown option $arg (npm run demo [-- --standalone | --foreground])" >&2; exit 2 ;;
  esac
done
if [ $mode = standalone ]; then
  TESTBED_PEERS=${TESTBED_PEERS:-registry oci-tools git openstack} bash "$HERE/up.sh"
else
  # Not the signing peers or the test charts: the demo needs neither (cosign alone builds ~25 min cold).
  # The real node runs the controller's pods (--foreground does without it).
  if [ ${#fg[@]} -eq 0 ]; then nodes=node; else nodes=; fi
  TESTBED_PEERS=${TESTBED_PEERS:-registry oci-tools git openstack kubernetes $nodes} bash "$HERE/up.sh"
fi

cat <<MSG

KupenStack local test bed is up (loopback only):
  OpenStack cloud       kupenstack-local in ~/.config/openstack/clouds.yaml
  OCI registry          http://127.0.0.1:5050        (anonymous; Basic-auth one on :5051)
  Git smart-HTTP        http://127.0.0.1:8180/git/   (user kupenstack)
MSG
if [ $mode = standalone ]; then
  echo
  exec node "$HERE/demo/demo.ts"
fi
cat <<MSG
  Kubernetes API        https://127.0.0.1:6443       (kubeconfig ${KUPENSTACK_TESTBED_HOME:-/var/lib/kupenstack-testbed}/kubernetes/admin.kubeconfig)

MSG
exec node "$HERE/demo/cluster.ts" "${fg[@]}"
