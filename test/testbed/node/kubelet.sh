#!/usr/bin/env bash
# Runs the kubelet in the private mount namespace node/up.sh made for it
# (unshare -m): plain files are bound over the host sysctls the kubelet writes,
# so it sets its values in those copies and the host keeps its own. Mounts
# under the kubelet's root dir still reach containerd: up.sh made it a shared
# mount before the unshare.
#   kubelet.sh SYSCTL_DIR "SYSCTL..." KUBELET ARGS...
set -euo pipefail
dir=$1 list=$2; shift 2
for s in $list; do
  f="$dir/${s//\//_}"
  cat "/proc/sys/$s" > "$f"
  mount --bind "$f" "/proc/sys/$s"
done
exec "$@"
