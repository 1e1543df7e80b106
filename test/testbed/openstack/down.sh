#!/bin/bash
# Stop the OpenStack test bed: exactly the process groups up.sh started (pid
# files in $TB_HOME/openstack/run), OpenStack services first, then rabbitmq,
# memcached, mariadb, epmd.  Nothing else is touched; state and packages stay.
set -uo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
T0=$(date +%s.%N)
os_stop_all
os_log "down ($(os_dt "$T0") s)"
