# shellcheck shell=bash disable=SC2034
# Shared by signing/{up,status,down}.sh (sourced after ../lib.sh, never executed).
. "$(dirname "${BASH_SOURCE[0]}")/versions.sh"
SIGNING_CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
COSIGN_BIN="$SIGNING_CACHE/cosign-$COSIGN_VERSION/bin/cosign"
REFERRERS_BIN="$SIGNING_CACHE/ggcr-registry-$GGCR_VERSION/bin/referrers-registry"
# The OCI 1.1 registry (referrers API); in memory: a restart empties it.
REFERRERS_PORT=5060
