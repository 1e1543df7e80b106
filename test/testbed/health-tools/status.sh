#!/usr/bin/env bash
# Exit 0 when lua5.4 runs and the kstatus check (cached build) runs or is being built.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs health-tools
rc=0
if command -v lua5.4 >/dev/null; then echo "lua5.4: $(command -v lua5.4)"; else echo "lua5.4: missing (apt-get install -y lua5.4)"; rc=1; fi
if echo '[]' | "$KSTATUS_BIN" >/dev/null 2>&1; then echo "kstatus: $KSTATUS_BIN"
elif [ -e "$KSTATUS_DIR.lock" ] && ! flock -n "$KSTATUS_DIR.lock" true; then echo "kstatus: building (log: $LOG_DIR/health-tools.log)"
else echo "kstatus: missing ($KSTATUS_BIN; bash test/testbed/health-tools/build.sh)"; rc=1; fi
exit $rc
