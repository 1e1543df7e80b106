#!/usr/bin/env bash
# Exit 0 when oras (cached build) and skopeo are usable.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
rc=0
if "$ORAS_BIN" version >/dev/null 2>&1; then echo "oras: $ORAS_BIN"; else echo "oras: missing ($ORAS_BIN)"; rc=1; fi
if command -v skopeo >/dev/null; then echo "skopeo: $(command -v skopeo)"; else echo "skopeo: missing"; rc=1; fi
exit $rc
