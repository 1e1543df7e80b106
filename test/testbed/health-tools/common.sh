# shellcheck shell=bash disable=SC2034
# Shared by health-tools/{up,status}.sh (sourced after ../lib.sh, never executed).
KSTATUS_VERSION=v0.37.2   # sigs.k8s.io/cli-utils, whose pkg/kstatus Flux's wait reads objects with
KSTATUS_CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
KSTATUS_DIR="$KSTATUS_CACHE/kstatus-$KSTATUS_VERSION"
KSTATUS_BIN="$KSTATUS_DIR/bin/kstatus"
