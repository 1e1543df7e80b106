#!/usr/bin/env bash
# The unit tests, the two integration lanes and the end-to-end files of `npm test` (vitest.config.ts),
# never more than two vitest processes at a time: one Vitest process runs the projects of a group with
# one worker limit for all of them, so one file at a time per lane needs a process per lane.
#   lane 1: unit + integration-others (OpenStack, the registries, Git);
#   lane 2: integration-kubernetes (the control plane, the charts' helm, cosign);
#   then e2e (pods on the real node), as soon as the first lane ends, beside the other one.
# Each lane's global setup brings the peers up or finds them up (test/testbed/up.sh takes the test
# bed's lock). Warm, the Kubernetes lane ends first (35 vs 43 min); on a fresh machine it waits ~30 min
# for its Go builds while the other lane runs, and ends last. Either way the end-to-end files start when
# a process slot frees, not after both lanes: two processes on the 2 cores, never three (a third once
# made the real cloud take 42 min instead of 16). They start only when the lane that ended passed.
# Each line a lane prints starts with its project's name (Vitest's own labels); the exit status is
# the first failing part's, after all ended.
#   bash test/run-integration.sh [vitest flags...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vitest=node_modules/.bin/vitest
start=$SECONDS
# Each part's output is also kept in test-artifacts/lanes/, so the end can list every part's failures
# together: a CI log that keeps only its tail shows them all, not just the last part's.
logs=test-artifacts/lanes
mkdir -p "$logs" && rm -f "$logs"/*.log
# One part: its output on ours and in its log; its status is the command's, and it ends when the log is whole.
part() { local name=$1; shift; "$@" 2>&1 | tee "$logs/$name.log"; return "${PIPESTATUS[0]}"; }
part integration-others env KS_PREBUILD_IMAGES=1 "$vitest" run --project unit --project integration-others "$@" &
others=$!
part integration-kubernetes "$vitest" run --project integration-kubernetes "$@" &
kubernetes=$!
e2e=""
# Background jobs of a script ignore Ctrl-C: a stopped run stops every part (by their PIDs).
trap 'for p in $others $kubernetes $e2e; do pkill -TERM -P "$p"; kill -TERM "$p"; done 2>/dev/null' INT TERM
declare -A rc=() took=()
# The first lane to end (bash >= 5.1: -p names it).
wait -n -p firstpid "$others" "$kubernetes"; status=$?
if [ "$firstpid" = "$others" ]; then first=others; rest=kubernetes; restpid=$kubernetes
else first=kubernetes; rest=others; restpid=$others; fi
rc[integration-$first]=$status; took[integration-$first]="ended at $((SECONDS - start)) s"
echo "[lanes] integration-$first ended (exit $status) after $((SECONDS - start)) s" >&2
if [ "${rc[integration-$first]}" -eq 0 ]; then
  bash test/testbed/hurry-prebuild.sh
  e2e_start=$SECONDS
  part e2e "$vitest" run --project e2e "$@" &
  e2e=$!
fi
wait "$restpid"; rc[integration-$rest]=$?; took[integration-$rest]="ended at $((SECONDS - start)) s"
echo "[lanes] integration-$rest ended (exit ${rc[integration-$rest]}) after $((SECONDS - start)) s" >&2
if [ -n "$e2e" ]; then
  wait "$e2e"; rc[e2e]=$?; took[e2e]="ran $((SECONDS - e2e_start)) s, from $((e2e_start - start)) s to $((SECONDS - start)) s"
  echo "[lanes] e2e ended (exit ${rc[e2e]}) after $((SECONDS - e2e_start)) s, $((SECONDS - start)) s from the start" >&2
else
  echo "[lanes] e2e not run: integration-$first failed" >&2
  rc[e2e]=1
fi
# Every part's exit status and failed tests, last, without colours.
echo "[lanes] summary:" >&2
for part in integration-$first integration-$rest e2e; do
  echo "[lanes]   $part: exit ${rc[$part]}, ${took[$part]:-not run}" >&2
  [ -f "$logs/$part.log" ] && sed 's/\x1b\[[0-9;]*m//g' "$logs/$part.log" | grep -E '^ *FAIL |^ *(Test Files|Tests) ' | sed 's/^ */[lanes]     /' >&2
done
for part in integration-$first integration-$rest e2e; do [ "${rc[$part]}" -ne 0 ] && exit "${rc[$part]}"; done
exit 0
