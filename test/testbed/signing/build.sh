#!/usr/bin/env bash
# Builds the signing peers from the Go module proxy, once per version, into a
# cache outside the repository (never committed):
#   cosign    github.com/sigstore/cosign/v3/cmd/cosign  -> $CACHE/cosign-$COSIGN_VERSION/bin/cosign
#   referrers-registry  go-containerregistry's registry with the OCI 1.1
#             referrers API on (recipe in go/registry) -> $CACHE/ggcr-registry-$GGCR_VERSION/bin/referrers-registry
#   bash test/testbed/signing/build.sh          # build what is missing
#   bash test/testbed/signing/build.sh --check  # exit 0 when both are built
# Not under the test-bed lock (cosign takes minutes cold); a lock of its own
# keeps builds one at a time.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/versions.sh"
CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
COSIGN_BIN="$CACHE/cosign-$COSIGN_VERSION/bin/cosign"
REGISTRY_BIN="$CACHE/ggcr-registry-$GGCR_VERSION/bin/referrers-registry"
if [ "${1:-}" = "--check" ]; then
  [ -x "$COSIGN_BIN" ] && [ -x "$REGISTRY_BIN" ]; exit $?
fi

export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -p=2"
export GOPATH="$CACHE/go/path" GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache"
mkdir -p "$GOMODCACHE" "$GOCACHE"
exec 8>"$CACHE/signing-build.lock"
flock -w 3600 8 || { echo "signing build: $CACHE/signing-build.lock held for an hour" >&2; exit 1; }
say() { echo "[signing-build $(date +%H:%M:%S)] $*" >&2; }
command -v go >/dev/null || { echo "signing build: no Go toolchain on PATH (expected /usr/local/go/bin/go, Go >= 1.26)" >&2; exit 1; }

# build BIN MODULE@VERSION PACKAGE LDFLAGS (MODULE@VERSION empty: PACKAGE is a recipe dir): go mod download the exact
# version (no version-list query, which a filtering proxy may refuse), build in
# its directory to a temporary name, then move it into place.
build() {
  local bin=$1 modver=$2 pkg=$3 ldf=$4 dir log src t0=$SECONDS
  [ -x "$bin" ] && return 0
  dir=$(dirname "$(dirname "$bin")"); log="$dir/build.log"; mkdir -p "$dir/bin"
  say "building $modver $pkg (log: $log)"
  if [ -z "$modver" ]; then src=$pkg; pkg=.   # a recipe module of ours (go.mod + main.go)
  else
    src=$(go mod download -json "$modver" 2>>"$log" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] && [ -d "$src" ] || { echo "signing build: go mod download $modver failed (GOPROXY=$(go env GOPROXY)); see $log" >&2; exit 1; }
  fi
  if ! (cd "$src" && nice -n 15 go build -trimpath -ldflags "$ldf" -o "$bin.tmp" "$pkg") >>"$log" 2>&1; then
    echo "signing build: $modver failed; last lines of $log:" >&2; tail -n 30 "$log" >&2; exit 1
  fi
  mv "$bin.tmp" "$bin"
  say "built $(basename "$bin") in $((SECONDS - t0)) s"
  echo "$(basename "$bin") $((SECONDS - t0))" >>"$dir/timings"
}

build "$REGISTRY_BIN" "" "$HERE/go/registry" "-s -w"
build "$COSIGN_BIN" "github.com/sigstore/cosign/v3@$COSIGN_VERSION" ./cmd/cosign \
  "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
