#!/usr/bin/env bash
# Runs the image's entrypoint "as in the cluster", with buildah (chroot
# isolation, host network: the API server and OpenStack are on loopback):
#   bash test/testbed/image/run.sh [--sa-dir DIR] [--image NAME] [--entrypoint CMD] [--env K=V]... -- ARGS...
# DIR holds what the kubelet mounts for a pod's service account (token,
# ca.crt, namespace; readable by the image's user, as the kubelet makes it); it
# is mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount and KUBERNETES_SERVICE_HOST/PORT
# name the test bed's API server (127.0.0.1:6443, which its serving
# certificate covers: TLS is verified). Without --sa-dir nothing is mounted.
# The entrypoint (unless --entrypoint) and the user are the image's own.
# SIGTERM/SIGINT are passed on; the working container is removed on exit (and
# those of runs that died are removed by the next run).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
. "$HERE/common.sh"
version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json" | head -n1)
image="$IMAGE_REPOSITORY:$version"
sa_dir=""; envs=(); entrypoint_override=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sa-dir) sa_dir=$2; shift 2 ;;
    --image) image=$2; shift 2 ;;
    --entrypoint) entrypoint_override=$2; shift 2 ;;
    --env) envs+=(--env "$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "image run: unknown option $1 (usage: run.sh [--sa-dir DIR] [--image NAME] [--entrypoint CMD] [--env K=V]... -- ARGS...)" >&2; exit 2 ;;
  esac
done
in_cluster=()
if [ -n "$sa_dir" ]; then
  [ -f "$sa_dir/token" ] && [ -f "$sa_dir/ca.crt" ] && [ -f "$sa_dir/namespace" ] \
    || { echo "image run: --sa-dir must name a directory with token, ca.crt and namespace" >&2; exit 2; }
  # /run, not /var/run: in the image /var/run is a symlink to /run, and buildah's chroot mounts
  # would resolve an absolute symlink on the host (it made /run/secrets there).
  in_cluster=(--volume "$(cd "$sa_dir" && pwd):/run/secrets/kubernetes.io/serviceaccount:ro"
    --env KUBERNETES_SERVICE_HOST=127.0.0.1 --env KUBERNETES_SERVICE_PORT=6443)
fi
image_exists "$image" || { echo "image run: $image is not built: bash test/testbed/image/build.sh" >&2; exit 1; }

# Working containers of runs whose shell is gone (killed with -9): vfs keeps a full copy of each.
for name in $(ib containers --noheading --format '{{.ContainerName}}' 2>/dev/null | grep '^ks-run-' || true); do
  pid=${name#ks-run-}
  [ -d "/proc/$pid" ] || ib rm "$name" >/dev/null 2>&1 || true
done

ctr=$(ib from --quiet --pull-never --name "ks-run-$$" "$image")
trap 'ib rm "$ctr" >/dev/null 2>&1 || true' EXIT
if [ -n "$entrypoint_override" ]; then
  entrypoint=("$entrypoint_override")
else
  mapfile -t entrypoint < <(ib inspect --type image --format '{{range .OCIv1.Config.Entrypoint}}{{println .}}{{end}}' "$image" | sed '/^$/d')
fi
[ ${#entrypoint[@]} -gt 0 ] || { echo "image run: $image has no entrypoint" >&2; exit 1; }
ib run --isolation chroot --network host "${in_cluster[@]}" "${envs[@]}" "$ctr" -- "${entrypoint[@]}" "$@" &
child=$!
# buildah run (chroot) does not pass signals on: on its own SIGTERM it exits 143 and the
# container's processes die unannounced. Signal the entrypoint itself (buildah-chroot-exec's
# child, tini), as a container runtime does, so the agent shuts down gracefully.
entrypoint_pid() {
  local queue=("$child") p c
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}; queue=("${queue[@]:1}")
    for c in $(ps -o pid= --ppid "$p" 2>/dev/null); do
      if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '^buildah-chroot-exec'; then echo "$c"; return 0; fi
      queue+=("$c")
    done
  done
  return 1
}
forward() {
  local pid
  pid=$(entrypoint_pid) && kill "-$1" "$pid" 2>/dev/null || kill "-$1" "$child" 2>/dev/null || true
}
trap 'forward TERM' TERM
trap 'forward INT' INT
rc=0
while :; do
  wait "$child" && rc=0 || rc=$?
  [ -d "/proc/$child" ] || break
done
exit "$rc"
