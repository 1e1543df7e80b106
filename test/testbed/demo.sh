#!/usr/bin/env bash
# The README's main job, for now: bring up the local cloud, the registry and
# the Git server, check the cloud answers, and print where everything is.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
bash "$HERE/up.sh"

echo
echo "KupenStack local test bed is up (loopback only)."
echo
echo "  OpenStack (public endpoints, region RegionOne):"
openstack --os-cloud kupenstack-local endpoint list --interface public -c "Service Type" -c URL -f value \
  | sort | awk '{ printf "    %-12s %s\n", $1, $2 }'
cat <<MSG

  OCI registry          http://127.0.0.1:5050        (anonymous; Basic-auth one on :5051)
  Git smart-HTTP        http://127.0.0.1:8180/git/   (user kupenstack)
  OpenStack cloud       kupenstack-local in ~/.config/openstack/clouds.yaml

Try:
  openstack --os-cloud kupenstack-local token issue
  openstack --os-cloud kupenstack-local network list
  node $ROOT/agent/cli/main.ts validate $ROOT/repo-template

Stop everything the test bed started:  npm run testbed:down
MSG
