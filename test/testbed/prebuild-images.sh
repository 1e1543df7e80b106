#!/usr/bin/env bash
# Builds, in the background of a full test run, the images the pod tests pull
# on the real node, so their builds overlap the integration tests instead of
# adding to the run (test/testbed/global-setup.ts starts it when
# KS_PREBUILD_IMAGES=1, as `npm test` sets it), at the lowest CPU and I/O
# priority: the tests running meanwhile keep the machine. Each build script
# takes the image lock and skips what is current, so a test that asks for an
# image while this runs waits for it, then finds it built; a build that failed
# here is tried again by its test, and fails loudly there.
#   bash test/testbed/prebuild-images.sh       # log: $TB_HOME/prebuild-images.log
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Who this is (pid, boot, start time): hurry-prebuild.sh raises this process group's priority when
# the end-to-end files start and need what is still building, and only if the file names this process.
tb_home="${KUPENSTACK_TESTBED_HOME:-/var/lib/kupenstack-testbed}"
stat=$(cat /proc/$$/stat); set -- ${stat##*) }
echo "$$ $(cat /proc/sys/kernel/random/boot_id) ${20}" > "$tb_home/prebuild-images.pid"
set --
# The agent's image (kubernetes/image.test.ts asks for it early in the Kubernetes lane) needs the
# Kubernetes build's helm: it is built before the next OpenStack image as soon as helm is there. One
# service per call of os-images/build.sh, whose image lock is held for the whole list it is given: a
# test that needs an image meanwhile waits for one service's build, not for the rest of the list (on a
# fresh machine the agent's image came after all thirteen, and its test would have waited for them).
helm_bin="$(bash "$HERE/kubernetes/build.sh" --dir)/helm"
agent=pending
agent_image() {
  [ $agent = pending ] && [ -x "$helm_bin" ] || return 0
  agent=tried
  bash "$HERE/image/build.sh" --push >/dev/null || echo "prebuild: the agent's image failed; its tests build it again" >&2
}
# The OpenStack images of controller/real-cloud.test.ts (the same lists it asks build.sh for; the first OpenStack
# service of each suite builds the shared layer, the others are manifests over it, seconds each): they need only
# Debian's packages and the bed's registry, so on a fresh machine they build under the Kubernetes build and the
# integration tests instead of at the start of the e2e part. First 2022.2 from bookworm, then the 2025.1
# services its upgrade goes to, from trixie.
for svc in mariadb memcached rabbitmq keystone glance placement neutron nova; do
  agent_image
  bash "$HERE/os-images/build.sh" --push "$svc" >/dev/null || echo "prebuild: the OpenStack image $svc failed; real-cloud.test.ts builds it again" >&2
done
for svc in keystone placement glance neutron nova; do
  agent_image
  OSI_SUITE=trixie bash "$HERE/os-images/build.sh" --push "$svc" >/dev/null || echo "prebuild: the 2025.1 OpenStack image $svc failed; real-cloud.test.ts builds it again" >&2
done
# Still no helm: the Kubernetes build (~25 min cold) is waited for, at most 40 min, else the agent's image is left to its tests.
for _ in $(seq 1 240); do
  [ $agent = pending ] && ! [ -x "$helm_bin" ] || break
  sleep 10
done
if [ $agent = pending ] && ! [ -x "$helm_bin" ]; then
  echo "prebuild: the Kubernetes build's helm is still building: the agent's image is left to its tests" >&2
  exit 0
fi
agent_image
echo "prebuild: done" >&2
