#!/usr/bin/env bash
# Builds the kstatus check (kstatus/main.go, never shipped) over Flux's kstatus library
# (sigs.k8s.io/cli-utils/pkg/kstatus) from the Go module proxy, cached outside the repo.
#   bash test/testbed/health-tools/build.sh            # build unless current (waits for a build under way)
#   bash test/testbed/health-tools/build.sh --check    # exit 0 when the current build is there
# Rebuilt when the program or its pinned modules change (the stamp is their checksum).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
. "$HERE/common.sh"
tb_dirs health-tools
sum=$(cat "$HERE/kstatus/go.mod" "$HERE/kstatus/go.sum" "$HERE/kstatus/main.go" | sha256sum | cut -c1-16)
current() { [ -x "$KSTATUS_BIN" ] && [ "$(cat "$KSTATUS_DIR/stamp" 2>/dev/null)" = "$sum" ]; }
if [ "${1:-}" = --check ]; then current; exit; fi
mkdir -p "$KSTATUS_DIR"
# One build at a time: a second caller (the test waiting for the background build) waits here, then finds it built.
exec 8>"$KSTATUS_DIR.lock"
flock 8
current && exit 0
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[ -x "$GO" ] || tb_fail health-tools "kstatus must be built from source and no Go toolchain was found (set GO=/path/to/go)"
tb_log "building the kstatus check with cli-utils $KSTATUS_VERSION (once; cached in $KSTATUS_DIR)"
t0=$SECONDS
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
echo '[]' | "$KSTATUS_BIN" >/dev/null || tb_fail health-tools "$KSTATUS_BIN does not run"
tb_log "kstatus check built in $((SECONDS - t0)) s: $KSTATUS_BIN"
