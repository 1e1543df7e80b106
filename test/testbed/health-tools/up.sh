#!/usr/bin/env bash
# What other GitOps tools judge KupenStack's objects with, for test/integration/controller/health-tools.test.ts:
#   lua5.4   Debian package: runs the Argo CD health script (deploy/chart/kupenstack/files/argocd-health.lua)
#   kstatus  a test program (kstatus/main.go, never shipped) over Flux's kstatus library
#            (sigs.k8s.io/cli-utils/pkg/kstatus) from the Go module proxy, cached outside the repo
# Idempotent: nothing is rebuilt or reinstalled when present.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
. "$HERE/common.sh"
t0=$SECONDS

tb_dirs health-tools

command -v lua5.4 >/dev/null || tb_apt lua5.4
command -v lua5.4 >/dev/null || tb_fail health-tools "lua5.4 missing after install"

# Rebuilt when the program or its pinned modules change (the stamp is their checksum).
sum=$(cat "$HERE/kstatus/go.mod" "$HERE/kstatus/go.sum" "$HERE/kstatus/main.go" | sha256sum | cut -c1-16)
if ! [ -x "$KSTATUS_BIN" ] || [ "$(cat "$KSTATUS_DIR/stamp" 2>/dev/null)" != "$sum" ]; then
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [ -x "$GO" ] || tb_fail health-tools "kstatus must be built from source and no Go toolchain was found (set GO=/path/to/go)"
  tb_log "building the kstatus check with cli-utils $KSTATUS_VERSION (once; cached in $KSTATUS_DIR)"
  mkdir -p "$KSTATUS_DIR"
  # Module and build caches beside the binary: no state in the repo or in $HOME; go.sum pins every module.
  export GOPATH="$KSTATUS_DIR/gopath" GOCACHE="$KSTATUS_DIR/gocache" GOFLAGS=-mod=mod CGO_ENABLED=0
  rm -rf "$KSTATUS_DIR/bin.new"
  if ! (cd "$HERE/kstatus" && "$GO" build -trimpath -o "$KSTATUS_DIR/bin.new/kstatus" .) >>"$LOG_DIR/health-tools.log" 2>&1; then
    tb_fail health-tools "building the kstatus check failed (GOPROXY=$("$GO" env GOPROXY))"
  fi
  rm -rf "$KSTATUS_DIR/bin"; mv "$KSTATUS_DIR/bin.new" "$KSTATUS_DIR/bin"
  echo "$sum" > "$KSTATUS_DIR/stamp"
  chmod -R u+w "$KSTATUS_DIR/gopath" 2>/dev/null || true
  rm -rf "$KSTATUS_DIR/gopath" "$KSTATUS_DIR/gocache"
fi
echo '[]' | "$KSTATUS_BIN" >/dev/null || tb_fail health-tools "$KSTATUS_BIN does not run"
tb_log "health tools ready in $((SECONDS - t0)) s: $(command -v lua5.4), $KSTATUS_BIN"
