#!/usr/bin/env bash
# `npm run demo`, the README's main job: bring up the local cloud, the registry,
# the Git server and the Kubernetes control plane, seed a Git repository from
# repo-template, and show it become the cloud:
#   npm run demo                   in-cluster: `kupenstack controller` (from the image when
#                                  test/testbed/image/build.sh built it, else the sources) makes
#                                  the repository's manifests custom resources, then OpenStack
#                                  objects; prints the kubectl commands that show them
#   npm run demo -- --standalone   `kupenstack agent` against the repository, no cluster
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode=cluster
for arg in "$@"; do
  case "$arg" in
    --standalone) mode=standalone ;;
    --cluster) mode=cluster ;;
    *) echo "demo: unknown option $arg (npm run demo [-- --standalone])" >&2; exit 2 ;;
  esac
done
if [ $mode = standalone ]; then
  TESTBED_PEERS=${TESTBED_PEERS:-registry oci-tools git openstack} bash "$HERE/up.sh"
else
  # Not the signing peers or the test charts: the demo needs neither (cosign alone builds ~25 min cold).
  TESTBED_PEERS=${TESTBED_PEERS:-registry oci-tools git openstack kubernetes} bash "$HERE/up.sh"
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
exec node "$HERE/demo/cluster.ts"
