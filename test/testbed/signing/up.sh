#!/usr/bin/env bash
# The signing peers: the real cosign (a client the tests run) and an OCI 1.1
# registry with the referrers API on 127.0.0.1:5060 (go-containerregistry's,
# in memory). Both are built from the Go module proxy by build.sh, once per
# version. Idempotent: a running registry is reused.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
. "$HERE/common.sh"
t0=$SECONDS
tb_dirs signing

if ! bash "$HERE/build.sh" --check; then
  tb_log "signing: building cosign $COSIGN_VERSION and the referrers registry (or waiting for the running build)"
  # Minutes on a cold cache: release the test-bed lock meanwhile (build.sh has its own).
  flock -u 9 2>/dev/null || true
  bash "$HERE/build.sh" 9>&- >/dev/null || tb_fail signing "building the signing peers failed (see above)"
  flock -w 1800 9 || tb_fail signing "could not take the test-bed lock back after the build"
fi
"$COSIGN_BIN" version >/dev/null 2>&1 || tb_fail signing "$COSIGN_BIN does not run"

tb_start referrers-registry "$REFERRERS_BIN" -port "$REFERRERS_PORT"
tb_wait_http "http://127.0.0.1:$REFERRERS_PORT/v2/" 30 || tb_fail referrers-registry "no answer on 127.0.0.1:$REFERRERS_PORT"
c=$(tb_http_code "http://127.0.0.1:$REFERRERS_PORT/v2/")
[ "$c" = 200 ] || tb_fail referrers-registry "GET http://127.0.0.1:$REFERRERS_PORT/v2/ -> $c (want 200; another service on the port?)"
tb_log "signing peers ready in $((SECONDS - t0)) s: $COSIGN_BIN, referrers registry 127.0.0.1:$REFERRERS_PORT"
