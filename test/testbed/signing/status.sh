#!/usr/bin/env bash
# Exit 0 when cosign is built and the referrers registry answers.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs signing
rc=0
if "$COSIGN_BIN" version >/dev/null 2>&1; then echo "cosign: $COSIGN_BIN"; else echo "cosign: missing ($COSIGN_BIN)"; rc=1; fi
c=$(tb_http_code "http://127.0.0.1:$REFERRERS_PORT/v2/")
if [ "$c" = 200 ] && tb_pid referrers-registry >/dev/null; then echo "referrers-registry: 127.0.0.1:$REFERRERS_PORT"; else echo "referrers-registry: down (GET /v2/ -> $c)"; rc=1; fi
exit $rc
