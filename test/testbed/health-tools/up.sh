#!/usr/bin/env bash
# What other GitOps tools judge KupenStack's objects with, for test/integration/controller/health-tools.test.ts:
#   lua5.4   Debian package: runs the Argo CD health script (deploy/chart/kupenstack/files/argocd-health.lua)
#   kstatus  a test program over Flux's kstatus library, built by build.sh from the Go module proxy
# Idempotent: nothing is rebuilt or reinstalled when present. Under the test suite's global setup
# (TESTBED_DEFER_UNBUILT=1) a cold kstatus build goes to the background: minutes of a fresh machine's
# run that every lane would wait for, when only one Kubernetes-lane file needs it (it waits in its beforeAll).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
. "$HERE/common.sh"
t0=$SECONDS

tb_dirs health-tools

command -v lua5.4 >/dev/null || tb_apt lua5.4
command -v lua5.4 >/dev/null || tb_fail health-tools "lua5.4 missing after install"

if bash "$HERE/build.sh" --check; then
  tb_log "health tools ready in $((SECONDS - t0)) s: $(command -v lua5.4), $KSTATUS_BIN"
elif [ "${TESTBED_DEFER_UNBUILT:-}" = 1 ]; then
  mkdir -p "$KSTATUS_CACHE"
  setsid bash "$HERE/build.sh" >>"$LOG_DIR/health-tools.log" 2>&1 </dev/null 8>&- 9>&- &
  tb_log "lua5.4 ready; the kstatus check builds in the background (log: $LOG_DIR/health-tools.log)"
else
  bash "$HERE/build.sh"
  tb_log "health tools ready in $((SECONDS - t0)) s: $(command -v lua5.4), $KSTATUS_BIN"
fi
