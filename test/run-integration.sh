#!/usr/bin/env bash
# The unit tests and the two integration lanes of `npm test` (vitest.config.ts), as two vitest
# processes side by side: one Vitest process runs the projects of a group with one worker limit
# for all of them, so one file at a time per lane needs a process per lane. Each lane's global
# setup brings the peers up or finds them up (test/testbed/up.sh takes the test bed's lock); on a
# fresh machine the Kubernetes lane waits for its build while the other lane runs. Each line a
# lane prints starts with its project's name (Vitest's own labels); the exit status is the first
# failing lane's, after both ended.
#   bash test/run-integration.sh [vitest flags...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vitest=node_modules/.bin/vitest
start=$SECONDS
KS_PREBUILD_IMAGES=1 "$vitest" run --project unit --project integration-others "$@" &
others=$!
"$vitest" run --project integration-kubernetes "$@" &
kubernetes=$!
# Background jobs of a script ignore Ctrl-C: a stopped run stops both lanes (by their PIDs).
trap 'kill -TERM "$others" "$kubernetes" 2>/dev/null' INT TERM
wait "$others"; rc_others=$?
echo "[lanes] unit and integration-others ended (exit $rc_others) after $((SECONDS - start)) s" >&2
wait "$kubernetes"; rc_kubernetes=$?
echo "[lanes] integration-kubernetes ended (exit $rc_kubernetes) after $((SECONDS - start)) s" >&2
[ "$rc_others" -ne 0 ] && exit "$rc_others"
exit "$rc_kubernetes"
