#!/usr/bin/env bash
# Builds the agent's image from deploy/Containerfile with buildah (chroot
# isolation, vfs storage) on the base base.sh makes, and tags it
# $IMAGE_REPOSITORY:<package version>.
#   bash test/testbed/image/build.sh            # build (skipped when the sources did not change)
#   bash test/testbed/image/build.sh --push     # build, push to the test-bed registry, pull back by digest
#   bash test/testbed/image/build.sh --check    # exit 0 when the current sources' image is built
# Prints, on stdout, `image=<name:tag>` and `id=<image id>` (with --push also
# `digest=<sha256:…>` and `pulled=<name@digest>`).
# The build context is staged outside the repository: the files the
# Containerfile copies, the agent compiled by the project's tsc into dist/ and the web view
# bundled by its vite into dist/view/,
# node_modules from `npm ci --omit=dev` on the project's lockfile (cached by
# the lockfile's hash), and the test bed's helm binary.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
. "$HERE/common.sh"
mode=${1:-build}

version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json" | head -n1)
[ -n "$version" ] || { echo "image: no version in $ROOT/package.json" >&2; exit 1; }
image="$IMAGE_REPOSITORY:$version"
helm_bin="$(bash "$ROOT/test/testbed/kubernetes/build.sh" --dir)/helm"
sources=(package.json package-lock.json tsconfig.json tsconfig.build.json agent oci lib view schemas deploy/crds deploy/image deploy/Containerfile)
# The sources' key: what the image is made of. An image with this label is current.
key=$( (cd "$ROOT" && find "${sources[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; echo "$IMAGE_BASE"; [ -x "$helm_bin" ] && sha256sum "$helm_bin") | sha256sum | cut -c1-32)
current() { [ "$(ib inspect --type image --format '{{index .ImageAnnotations "io.kupenstack.sources"}}' "$image" 2>/dev/null)" = "$key" ]; }
if [ "$mode" = --check ]; then current && exit 0 || exit 1; fi

image_lock
image_tools
[ -x "$helm_bin" ] || { echo "image: $helm_bin is missing: build the test bed's Kubernetes binaries first (bash test/testbed/kubernetes/build.sh)" >&2; exit 1; }
bash "$HERE/base.sh" >/dev/null

t0=$SECONDS
if current; then
  image_log "$image is current (sources $key)"
else
  ctx="$IMAGE_TB_HOME/context"
  rm -rf "$ctx"; mkdir -p "$ctx/deploy"
  (cd "$ROOT" && cp -r package.json package-lock.json schemas "$ctx/" && cp -r deploy/crds deploy/image deploy/Containerfile "$ctx/deploy/")
  # The agent as JavaScript, compiled from the sources hashed above (never a dist/ left
  # from an earlier build), by the project's own TypeScript (a dev dependency).
  tsc_bin="$ROOT/node_modules/.bin/tsc"
  [ -x "$tsc_bin" ] || { echo "image: $tsc_bin is missing: install the project's dependencies first (npm ci)" >&2; exit 1; }
  "$tsc_bin" -p "$ROOT/tsconfig.build.json" --outDir "$ctx/dist" --sourceMap false >&2 \
    || { echo "image: compiling the agent (tsc -p tsconfig.build.json) failed" >&2; exit 1; }
  # The web view's pages (--view-address serves dist/view), bundled by the project's own vite as `npm run build` does.
  vite_bin="$ROOT/node_modules/.bin/vite"
  [ -x "$vite_bin" ] || { echo "image: $vite_bin is missing: install the project's dependencies first (npm ci)" >&2; exit 1; }
  (cd "$ROOT" && "$vite_bin" build --config view/vite.config.ts --outDir "$ctx/dist/view" --emptyOutDir --logLevel warn >&2) \
    || { echo "image: bundling the web view (vite build --config view/vite.config.ts) failed" >&2; exit 1; }
  cp "$helm_bin" "$ctx/helm"
  lock_hash=$(sha256sum "$ROOT/package-lock.json" | cut -c1-16)
  modules="$IMAGE_CACHE/node_modules-$lock_hash-r1"
  if [ ! -d "$modules/node_modules" ]; then
    image_log "installing production dependencies from package-lock.json (npm ci --omit=dev)"
    rm -rf "$modules.tmp"; mkdir -p "$modules.tmp"
    cp "$ROOT/package.json" "$ROOT/package-lock.json" "$modules.tmp/"
    npm_bin=$(command -v npm || echo /opt/node24/bin/npm)
    (cd "$modules.tmp" && "$npm_bin" ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    # Type declarations and source maps are never loaded at run time (a third of client-node's size).
    find "$modules.tmp/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -delete
    rm -rf "$modules"; mv "$modules.tmp" "$modules"
  fi
  cp -r "$modules/node_modules" "$ctx/node_modules"
  image_log "building $image from deploy/Containerfile on $IMAGE_BASE"
  revision=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  ib build --quiet --isolation chroot --pull-never --layers=false \
    --build-arg BASE="$IMAGE_BASE" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
    --annotation io.kupenstack.sources="$key" \
    -f "$ctx/deploy/Containerfile" -t "$image" "$ctx" >/dev/null
  rm -rf "$ctx"
  # Earlier builds of this tag are left untagged: remove them (vfs keeps full copies).
  ib images --quiet --filter dangling=true | xargs -r -n1 sh -c 'buildah --root "$0" --runroot "$1" --storage-driver vfs rmi "$2" >/dev/null 2>&1 || true' "$IMAGE_STORAGE" "$IMAGE_RUNROOT"
  image_log "built $image in $((SECONDS - t0)) s"
fi
echo "image=$image"
echo "id=$(ib inspect --type image --format '{{.FromImageID}}' "$image")"

if [ "$mode" = --push ]; then
  digestfile="$IMAGE_TB_HOME/push.digest"
  ib push --quiet --tls-verify=false --digestfile "$digestfile" "$image" "docker://$image" >&2
  digest=$(cat "$digestfile")
  # Pulled back by digest: what a node would pull.
  ib pull --quiet --tls-verify=false "docker://$IMAGE_REPOSITORY@$digest" >/dev/null
  image_log "pushed $image ($digest) and pulled $IMAGE_REPOSITORY@$digest back in $((SECONDS - t0)) s"
  echo "digest=$digest"
  echo "pulled=$IMAGE_REPOSITORY@$digest"
fi
