#!/usr/bin/env bash
# Second and third real OCI clients for the interoperability tests:
#   oras    built from the Go module proxy, cached outside the repo by version
#           ($ORAS_CACHE/oras-$ORAS_VERSION/bin/oras; never committed)
#   skopeo  Debian package
# Idempotent: nothing is rebuilt or reinstalled when present.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$HERE/../lib.sh"
. "$HERE/common.sh"
t0=$SECONDS

tb_dirs oci-tools

if ! command -v skopeo >/dev/null; then
  tb_apt skopeo
fi
command -v skopeo >/dev/null || tb_fail oci-tools "skopeo missing after install"

# grep reads all of it (no -q): oras killed by SIGPIPE after an early match fails the pipe under pipefail, and a good binary was rebuilt.
if ! [ -x "$ORAS_BIN" ] || ! "$ORAS_BIN" version 2>/dev/null | grep "Version: *${ORAS_VERSION#v}" >/dev/null; then
  GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [ -x "$GO" ] || tb_fail oci-tools "oras must be built from source and no Go toolchain was found (set GO=/path/to/go)"
  tb_log "building oras $ORAS_VERSION with $GO (once; cached in $ORAS_DIR)"
  mkdir -p "$ORAS_DIR"
  # Module and build caches beside the binary: no state in the repo or in $HOME.
  # `go install pkg@version` asks the proxy for the module's version list to
  # check deprecations, which a filtering proxy may refuse (403); downloading
  # the exact version and building it needs only that version.
  export GOPATH="$ORAS_DIR/gopath" GOCACHE="$ORAS_DIR/gocache" GOFLAGS=-mod=mod CGO_ENABLED=0
  src=$("$GO" mod download -json "oras.land/oras@$ORAS_VERSION" 2>>"$LOG_DIR/oci-tools.log" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] && [ -d "$src" ] || tb_fail oci-tools "go mod download oras.land/oras@$ORAS_VERSION failed (GOPROXY=$("$GO" env GOPROXY))"
  rm -rf "$ORAS_DIR/bin.new"
  if ! (cd "$src" && "$GO" build -trimpath -o "$ORAS_DIR/bin.new/oras" ./cmd/oras) >>"$LOG_DIR/oci-tools.log" 2>&1; then
    tb_fail oci-tools "building oras $ORAS_VERSION failed"
  fi
  rm -rf "$ORAS_DIR/bin"; mv "$ORAS_DIR/bin.new" "$ORAS_DIR/bin"
  chmod -R u+w "$ORAS_DIR/gopath" 2>/dev/null || true
  rm -rf "$ORAS_DIR/gopath" "$ORAS_DIR/gocache"
fi
"$ORAS_BIN" version >/dev/null || tb_fail oci-tools "$ORAS_BIN does not run"
tb_log "oci tools ready in $((SECONDS - t0)) s: $ORAS_BIN, $(command -v skopeo)"
