#!/usr/bin/env bash
# The unit tests, the two integration lanes and the real cloud's end-to-end file of `npm test`
# (vitest.config.ts), as three vitest processes side by side: one Vitest process runs the projects
# of a group with one worker limit for all of them, so one file at a time per lane needs a process
# per lane. Each lane's global setup brings the peers up or finds them up (test/testbed/up.sh takes
# the test bed's lock); on a fresh machine the Kubernetes lane and the real cloud wait for their
# build while the other lane runs. The real cloud (`e2e-cloud`, ~20 min alone on a quiet machine)
# shares no object with the lanes: its controllers select its OpenStackCloud and namespaces by
# label, and a test controller that names no cloud selector selects none (controller/harness.ts).
# Each line a lane prints starts with its project's name (Vitest's own labels); the exit status is
# the first failing lane's, after all ended.
#   bash test/run-integration.sh [vitest flags...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vitest=node_modules/.bin/vitest
start=$SECONDS
KS_PREBUILD_IMAGES=1 "$vitest" run --project unit --project integration-others "$@" &
others=$!
"$vitest" run --project integration-kubernetes "$@" &
kubernetes=$!
"$vitest" run --project e2e-cloud "$@" &
cloud=$!
# Background jobs of a script ignore Ctrl-C: a stopped run stops every lane (by their PIDs).
trap 'kill -TERM "$others" "$kubernetes" "$cloud" 2>/dev/null' INT TERM
wait "$others"; rc_others=$?
echo "[lanes] unit and integration-others ended (exit $rc_others) after $((SECONDS - start)) s" >&2
wait "$kubernetes"; rc_kubernetes=$?
echo "[lanes] integration-kubernetes ended (exit $rc_kubernetes) after $((SECONDS - start)) s" >&2
wait "$cloud"; rc_cloud=$?
echo "[lanes] e2e-cloud ended (exit $rc_cloud) after $((SECONDS - start)) s" >&2
for rc in "$rc_others" "$rc_kubernetes" "$rc_cloud"; do [ "$rc" -ne 0 ] && exit "$rc"; done
exit 0
