#!/usr/bin/env bash
# Builds the ORC peer of the benchmark (openstack-resource-controller's manager)
# once per version into a cache outside the repository, with its CRDs beside it.
# By default from the Go module proxy; ORC_SOURCE_TGZ=<file> builds a source
# archive instead (e.g. a newer upstream commit). Nothing here ships: a
# benchmark peer only, never in `npm test`'s path.
#   bash test/testbed/orc/build.sh          # build what is missing, print the cache dir
#   bash test/testbed/orc/build.sh --dir    # print the cache dir only
#   bash test/testbed/orc/build.sh --check  # exit 0 when built
# The cache dir holds bin/orc-manager, crd/*.yaml and SOURCE (what was built).
set -euo pipefail
ORC_VERSION=${ORC_VERSION:-v2.4.0}
ORC_MODULE=github.com/k-orc/openstack-resource-controller/v2
CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
if [ -n "${ORC_SOURCE_TGZ:-}" ]; then
  [ -f "$ORC_SOURCE_TGZ" ] || { echo "orc build: ORC_SOURCE_TGZ=$ORC_SOURCE_TGZ is not a file" >&2; exit 1; }
  # One cache per archive content: a different archive never reuses another's binary.
  DIR="$CACHE/orc-src-$(sha256sum "$ORC_SOURCE_TGZ" | cut -c1-12)"
else
  DIR="$CACHE/orc-$ORC_VERSION"
fi
if [ "${1:-}" = "--dir" ]; then echo "$DIR"; exit 0; fi
built() { [ -x "$DIR/bin/orc-manager" ] && [ -s "$DIR/SOURCE" ] && compgen -G "$DIR/crd/*.yaml" >/dev/null; }
if [ "${1:-}" = "--check" ]; then built; exit; fi
# Built already: no lock (another version's build may hold its own for minutes).
if built; then echo "[orc-build] built already: $(cat "$DIR/SOURCE")" >&2; echo "$DIR"; exit 0; fi

export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=local CGO_ENABLED=0
export GOPATH="$CACHE/go/path" GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache"
mkdir -p "$DIR/bin" "$DIR/log" "$GOMODCACHE" "$GOCACHE"
# One build per cache dir at a time (two benches starting at once build it once).
exec 8>"$DIR.lock"
flock -w 3600 8 || { echo "orc build: $DIR.lock held for an hour" >&2; exit 1; }
say() { echo "[orc-build $(date +%H:%M:%S)] $*" >&2; }
command -v go >/dev/null || { echo "orc build: no Go toolchain on PATH (expected /usr/local/go/bin/go)" >&2; exit 1; }
if built; then say "built already: $(cat "$DIR/SOURCE")"; echo "$DIR"; exit 0; fi

LOG="$DIR/log/orc-manager-build.log"
# src_dir: the source tree to build from (the module's read-only Dir, or the unpacked archive)
src_dir() {
  if [ -n "${ORC_SOURCE_TGZ:-}" ]; then
    rm -rf "$DIR/src" && mkdir -p "$DIR/src" && tar -xzf "$ORC_SOURCE_TGZ" -C "$DIR/src"
    echo "$DIR/src"
  else
    (cd "$DIR" && GOFLAGS= go mod download -json "$ORC_MODULE@$ORC_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  fi
}
if [ -n "${ORC_SOURCE_TGZ:-}" ]; then SOURCE="archive $ORC_SOURCE_TGZ (sha256 $(sha256sum "$ORC_SOURCE_TGZ" | cut -c1-12))"
else SOURCE="module $ORC_MODULE@$ORC_VERSION (Go module proxy)"; fi
say "building orc-manager from $SOURCE (log: $LOG)"
t0=$SECONDS
# A temporary name first: a half-written binary never looks built.
if ! {
  src=$(src_dir) && [ -n "$src" ] && [ -d "$src/cmd/manager" ] &&
    (cd "$src" && GOFLAGS="-p=2 -mod=readonly -buildvcs=false" nice -n 15 go build -trimpath -ldflags "-s -w" -o "$DIR/bin/.orc-manager.tmp" ./cmd/manager) &&
    rm -rf "$DIR/crd" && mkdir -p "$DIR/crd" && cp "$src"/config/crd/bases/*.yaml "$DIR/crd/" && chmod u+w "$DIR/crd"/*.yaml
} >"$LOG" 2>&1; then
  echo "orc build: orc-manager failed; last lines of $LOG:" >&2
  tail -n 30 "$LOG" >&2; exit 1
fi
mv "$DIR/bin/.orc-manager.tmp" "$DIR/bin/orc-manager"
echo "$SOURCE" >"$DIR/SOURCE"
say "built orc-manager from $SOURCE in $((SECONDS - t0)) s"
echo "$DIR"
