#!/bin/bash
# One line per service of the OpenStack test bed; exit 0 only when every
# service runs (process group we started) and its API answers (HTTP) / its
# port listens / it heartbeated within the last 75 s (nova + cinder workers) /
# it does its work (the Octavia daemons: os_octavia_check).
set -uo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
rc=0
for s in $OS_SERVICES; do
  if ! pid=$(tb_pid "$s"); then
    printf '%-16s DOWN     (no running process group we started)\n' "$s"; rc=1; continue
  fi
  url=$(os_url "$s") port=$(os_port "$s") db=$(os_heartbeat_db "$s") state=ok detail=""
  if [ -n "$url" ]; then
    code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' "$url" || true)
    detail="$url HTTP $code"
    { [ -z "$code" ] || [ "$code" = 000 ] || [ "${code:0:1}" = 5 ]; } && state=FAIL
  elif [[ " $OCTAVIA_SERVICES " == *" $s "* ]]; then
    detail=$(os_octavia_check "$s" 2>/dev/null) || state=FAIL
  elif [ "$s" = libvirtd ]; then
    detail="qemu:///system $(virsh -c qemu:///system list --name 2>/dev/null | grep -c . || true) guests"
    virsh -c qemu:///system version >/dev/null 2>&1 || state=FAIL
  elif [ -n "$db" ]; then
    age=$(mysql -uroot -N -e "$(os_heartbeat_sql "$s" 'TIMESTAMPDIFF(SECOND, MAX(@COL@), UTC_TIMESTAMP())')" 2>/dev/null || true)
    detail="heartbeat ${age:-?} s ago"
    { [ -z "$age" ] || [ "$age" = NULL ] || [ "$age" -gt 75 ]; } && state=FAIL
  else
    detail="127.0.0.1:$port"
    tb_port_listening "$port" || { state=FAIL; detail="$detail not listening"; }
  fi
  [ $state = ok ] || rc=1
  printf '%-16s %-8s pgid %-7s %s\n' "$s" "$([ $state = ok ] && echo running || echo FAILING)" "$pid" "$detail"
done
exit $rc
