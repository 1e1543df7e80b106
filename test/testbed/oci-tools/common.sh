# shellcheck shell=bash disable=SC2034
# Shared by oci-tools/{up,status}.sh (sourced after ../lib.sh, never executed).
ORAS_VERSION=v1.3.3
ORAS_CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
ORAS_DIR="$ORAS_CACHE/oras-$ORAS_VERSION"
ORAS_BIN="$ORAS_DIR/bin/oras"
