#!/usr/bin/env bash
# Builds the OpenTofu peer of the benchmark (tofu and terraform-provider-openstack)
# from the Go module proxy, once per version, into a cache outside the
# repository, and lays the provider out as a local filesystem mirror (the
# machine reaches no provider registry). Nothing here ships: the binaries are
# a benchmark peer only.
#   bash test/testbed/opentofu/build.sh          # build what is missing, print the cache dir
#   bash test/testbed/opentofu/build.sh --dir    # print the cache dir only
#   bash test/testbed/opentofu/build.sh --check  # exit 0 when both are built
set -euo pipefail
TOFU_VERSION=${TOFU_VERSION:-v1.12.6}
PROVIDER_VERSION=${OPENSTACK_PROVIDER_VERSION:-v3.4.0}
CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
DIR="$CACHE/opentofu-$TOFU_VERSION-openstack-$PROVIDER_VERSION"
BIN="$DIR/bin"
# The unpacked mirror layout: HOSTNAME/NAMESPACE/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION
PDIR="$DIR/mirror/registry.opentofu.org/terraform-provider-openstack/openstack/${PROVIDER_VERSION#v}/linux_amd64"
PROVIDER="$PDIR/terraform-provider-openstack_$PROVIDER_VERSION"
if [ "${1:-}" = "--dir" ]; then echo "$DIR"; exit 0; fi
if [ "${1:-}" = "--check" ]; then [ -x "$BIN/tofu" ] && [ -x "$PROVIDER" ]; exit; fi

export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=local CGO_ENABLED=0
# The checksum database has no entry for the provider's v3 module (404): its go.mod and zip come
# from the module proxy unchecked by the sum database; the dependencies are still checked by its go.sum.
export GONOSUMDB="${GONOSUMDB:+$GONOSUMDB,}github.com/terraform-provider-openstack/terraform-provider-openstack"
export GOPATH="$CACHE/go/path" GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache"
mkdir -p "$BIN" "$PDIR" "$DIR/log" "$GOMODCACHE" "$GOCACHE"
exec 8>"$CACHE/opentofu-build.lock"
flock -w 3600 8 || { echo "opentofu build: $CACHE/opentofu-build.lock held for an hour" >&2; exit 1; }
command -v go >/dev/null || { echo "opentofu build: no Go toolchain on PATH (expected /usr/local/go/bin/go)" >&2; exit 1; }
say() { echo "[opentofu-build $(date +%H:%M:%S)] $*" >&2; }

# install NAME DEST MODULE VERSION PKG: builds PKG inside the downloaded module's own
# tree (OpenTofu's go.mod has replace directives, which `go install pkg@v` refuses),
# into a temporary name first so a half-written binary never looks built.
install() {
  local name=$1 dest=$2 mod=$3 ver=$4 pkg=$5
  [ -x "$dest" ] && return 0
  say "building $name (log: $DIR/log/$name-build.log)"
  local t0=$SECONDS src
  if ! {
    src=$(cd "$DIR" && GOFLAGS= go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') &&
      [ -n "$src" ] &&
      (cd "$src" && GOFLAGS="-p=2 -mod=readonly" nice -n 15 go build -trimpath -ldflags "-s -w" -o "$dest.tmp" "$pkg")
  } >"$DIR/log/$name-build.log" 2>&1; then
    echo "opentofu build: $name failed; last lines of $DIR/log/$name-build.log:" >&2
    tail -n 30 "$DIR/log/$name-build.log" >&2; exit 1
  fi
  mv "$dest.tmp" "$dest"
  say "built $name in $((SECONDS - t0)) s"
}
install tofu "$BIN/tofu" github.com/opentofu/opentofu "$TOFU_VERSION" ./cmd/tofu
install provider "$PROVIDER" github.com/terraform-provider-openstack/terraform-provider-openstack/v3 "$PROVIDER_VERSION" .
echo "$DIR"
