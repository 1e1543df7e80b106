#!/usr/bin/env bash
# Exit 0 when lua5.4 and the kstatus check (cached build) run.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
rc=0
if command -v lua5.4 >/dev/null; then echo "lua5.4: $(command -v lua5.4)"; else echo "lua5.4: missing (apt-get install -y lua5.4)"; rc=1; fi
if echo '[]' | "$KSTATUS_BIN" >/dev/null 2>&1; then echo "kstatus: $KSTATUS_BIN"; else echo "kstatus: missing ($KSTATUS_BIN)"; rc=1; fi
exit $rc
