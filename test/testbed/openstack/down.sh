#!/bin/bash
# Stop the OpenStack test bed: exactly the process groups up.sh started (pid
# files in $TB_HOME/openstack/run), OpenStack services first, then rabbitmq,
# memcached, mariadb, epmd.  Nothing else is touched; state and packages stay.
set -uo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
T0=$(date +%s.%N)
# the real host's guests: QEMU runs in a session of its own, so stopping libvirtd's group leaves them
if tb_pid libvirtd >/dev/null; then
  for d in $(virsh -c qemu:///system list --name 2>/dev/null); do
    os_log "destroying guest $d of the real host"; virsh -c qemu:///system destroy "$d" >/dev/null 2>&1 || true
  done
fi
os_stop_all
os_log "down ($(os_dt "$T0") s)"
