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
# First the OpenStack images of controller/real-cloud.test.ts (the same list it asks build.sh for): they
# need only Debian's packages and the bed's registry, so on a fresh machine they build under the
# Kubernetes build and the integration tests (~17 min cold) instead of at the start of the e2e part.
bash "$HERE/os-images/build.sh" --push mariadb memcached rabbitmq keystone glance placement neutron nova >/dev/null || echo "prebuild: the OpenStack images failed; real-cloud.test.ts builds them again" >&2
# And the 2025.1 services its upgrade goes to, from Debian trixie's packages (the same list it asks for).
OSI_SUITE=trixie bash "$HERE/os-images/build.sh" --push keystone placement glance neutron nova >/dev/null || echo "prebuild: the 2025.1 OpenStack images failed; real-cloud.test.ts builds them again" >&2
# Then the agent's image (kubernetes/image.test.ts asks for it, late in the run). It needs the Kubernetes
# build's helm: on a fresh machine that build (~25 min) may still be going; it is waited for (build.sh
# --check: every binary there), at most 40 min, else its tests build the image when they reach it.
for _ in $(seq 1 240); do
  bash "$HERE/kubernetes/build.sh" --check 2>/dev/null && break
  sleep 10
done
if ! bash "$HERE/kubernetes/build.sh" --check; then
  echo "prebuild: the Kubernetes binaries are still building: the agent's image is left to its tests" >&2
  exit 0
fi
bash "$HERE/image/build.sh" --push >/dev/null || echo "prebuild: the agent's image failed; its tests build it again" >&2
echo "prebuild: done" >&2
