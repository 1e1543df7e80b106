#!/usr/bin/env bash
# Builds the Kubernetes peer's binaries from the Go module proxy (no release
# tarballs: the machine reaches only the proxy), once per version, into a cache
# outside the repository. Each binary is built only if missing, so an
# interrupted build resumes where it stopped.
#   bash test/testbed/kubernetes/build.sh        # build what is missing, then print the bin dir
#   bash test/testbed/kubernetes/build.sh --dir  # print the bin dir only
#   bash test/testbed/kubernetes/build.sh --check  # exit 0 when every binary is built
#   bash test/testbed/kubernetes/build.sh --list   # the binaries it builds, in build order
# Deliberately not under the test-bed lock (a cold build takes ~25 min and the
# other peers must not wait for it); a lock of its own keeps builds one at a time.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/versions.sh"

CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}"
BIN="$CACHE/kubernetes-$K8S_VERSION/bin"
if [ "${1:-}" = "--dir" ]; then echo "$BIN"; exit 0; fi
ALL="etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm kubelet"
if [ "${1:-}" = "--list" ]; then echo "$ALL"; exit 0; fi
if [ "${1:-}" = "--check" ]; then
  for b in $ALL; do [ -x "$BIN/$b" ] || exit 1; done
  exit 0
fi

# --wait NAME...: until these binaries are built. A running build (the lock held, usually up.sh's
# background one) makes them one by one, the plane's first: a peer waits for its own, not for the
# whole list (a fresh machine's Kubernetes tests began 8 min later waiting for helm and the kubelet).
# With no build running, one is started here.
if [ "${1:-}" = "--wait" ]; then
  shift
  built() { local b; for b in "$@"; do [ -x "$BIN/$b" ] || return 1; done; }
  mkdir -p "$CACHE"
  until built "$@"; do
    if flock -n "$CACHE/kubernetes-build.lock" true; then exec bash "$HERE/build.sh"; fi
    sleep 5
  done
  exit 0
fi

export PATH=/usr/local/go/bin:$PATH
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-p=2
export GOPATH="$CACHE/go/path" GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache"
LOG_DIR="$CACHE/kubernetes-$K8S_VERSION/log"
mkdir -p "$BIN" "$LOG_DIR" "$GOMODCACHE" "$GOCACHE"

exec 8>"$CACHE/kubernetes-build.lock"
flock -w 3600 8 || { echo "kubernetes build: $CACHE/kubernetes-build.lock held for an hour; see $LOG_DIR" >&2; exit 1; }

say() { echo "[kubernetes-build $(date +%H:%M:%S)] $*" >&2; }
command -v go >/dev/null || { echo "kubernetes build: no Go toolchain on PATH (expected /usr/local/go/bin/go, Go >= 1.25)" >&2; exit 1; }

# build NAME CMD...: runs CMD unless $BIN/NAME exists; times it into $LOG_DIR/NAME-build.log
build() {
  local name=$1; shift
  [ -x "$BIN/$name" ] && return 0
  say "building $name (log: $LOG_DIR/$name-build.log)"
  local t0=$SECONDS
  if ! ( "$@" ) >"$LOG_DIR/$name-build.log" 2>&1; then
    echo "kubernetes build: $name failed; last lines of $LOG_DIR/$name-build.log:" >&2
    tail -n 30 "$LOG_DIR/$name-build.log" >&2
    exit 1
  fi
  [ -x "$BIN/$name" ] || { echo "kubernetes build: $name built but $BIN/$name is missing" >&2; exit 1; }
  say "built $name in $((SECONDS - t0)) s"
  echo "$name $((SECONDS - t0))" >>"$LOG_DIR/timings"
}

# Builds go to a temporary name first: a half-written binary must never look built.
build_etcd() {
  cd "$HERE/go/etcd"
  nice -n 15 go build -trimpath -ldflags "-s -w" -o "$BIN/.etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$BIN/.etcd.tmp" "$BIN/etcd"
}

# kube_ldflags: version stamps, so `--version` and /version say $K8S_VERSION (helm's capabilities read them)
kube_ldflags() {
  local ldf="-s -w" p minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$ldf"
}

build_kube() { # one go build for the four: they share most packages
  cd "$HERE/go/kube"
  local ldf p; ldf=$(kube_ldflags)
  local tmp="$BIN/.kube.tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
  nice -n 15 go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$ldf" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  for p in kube-controller-manager kube-scheduler kubectl kube-apiserver; do mv "$tmp/$p" "$BIN/$p"; done
  rmdir "$tmp"
}

# The real node's kubelet (node/up.sh), from the same wrapper module at the
# control plane's version; built after the plane's binaries, reusing their cache.
build_kubelet() {
  cd "$HERE/go/kube"
  nice -n 15 go build -trimpath -tags=selinux,notest,grpcnotrace -ldflags "$(kube_ldflags)" -o "$BIN/.kubelet.tmp" k8s.io/kubernetes/cmd/kubelet
  mv "$BIN/.kubelet.tmp" "$BIN/kubelet"
}

build_kwok() {
  local tmp="$BIN/.kwok.tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
  GOBIN="$tmp" nice -n 15 go install -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$tmp/kwok" "$BIN/kwok"; rmdir "$tmp"
}

build_helm() {
  local tmp="$BIN/.helm.tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
  GOBIN="$tmp" nice -n 15 go install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
  mv "$tmp/helm" "$BIN/helm"; rmdir "$tmp"
}

# Order: what the control plane needs first, so it can start before helm is done.
build etcd build_etcd
build kube-apiserver build_kube
build kwok build_kwok
build helm build_helm
build kubelet build_kubelet
# kwok's stage files come from its module, which go install has just downloaded.
echo "$BIN"
