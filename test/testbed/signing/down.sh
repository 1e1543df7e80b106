#!/usr/bin/env bash
# Stops the referrers registry the test bed started (by recorded PID).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs signing
tb_stop referrers-registry
