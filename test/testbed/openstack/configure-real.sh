#!/bin/bash
# The real compute host's step of the OpenStack test bed (run by up.sh after the other configuration
# steps, before the services start; safe to run alone). Additive and idempotent, so an up bed gets it
# on its next up.sh without a full re-configuration (real/README.md says what and why):
#   1. installs libvirt, QEMU and Neutron's linuxbridge, DHCP, L3 and metadata agents (at once when there)
#   2. renders real/conf/ into /etc (only files whose content changed are written), the zone-only DHCP
#      and L3 schedulers onto neutron-server's PYTHONPATH, the nova-metadata-api wrapper
#   3. sets the options the shared services need: Neutron binds with linuxbridge first, then the fake
#      host's no-op driver, notifies DHCP agents and schedules only zone "real" networks and routers
#      (network_auto_schedule must stay on: Neutron schedules a new network only then; the zone-only
#      scheduler's agent-side auto-scheduling does nothing);
#      Nova gives a server without a zone the fake host's zone "nova", so only servers that ask for
#      zone "real" ever land on the real host
#   4. restarts exactly the services that run with a file written after they started (neutron-server,
#      nova-api, nova-scheduler once; a real-host service whose file changed)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
RLOG="$LOG_DIR/configure-real.log"
trap 'tb_fail configure-real "configure-real.sh failed at line $LINENO (log: $RLOG)"' ERR
METADATA_SECRET=kupenstack-testbed-metadata

# ---------------------------------------------------------------- packages
# shellcheck disable=SC2086
if [ "$(dpkg-query -W -f='${Status}\n' $REAL_PACKAGES 2>/dev/null | grep -c '^install ok installed$' || true)" != "$(echo $REAL_PACKAGES | wc -w)" ]; then
  t=$(date +%s.%N)
  os_log "installing the real host's Debian packages (libvirt, QEMU, Neutron's agents)"
  . "$OS_DIR/preseed.sh"
  os_preseed | debconf-set-selections
  # shellcheck disable=SC2086
  tb_apt $REAL_PACKAGES
  os_log "real host: apt took $(os_dt "$t") s"
fi

# ---------------------------------------------------------------- files
# put SRC DEST: writes DEST only when its content changes (a running service keeps an unchanged file)
put() {
  if cmp -s "$1" "$2"; then rm -f "$1"; return 0; fi
  echo "$(date -Is) wrote $2" >> "$RLOG"
  chmod 640 "$1"; mv "$1" "$2"
}
render() {  # render TEMPLATE DEST
  sed -e "s|@REAL_HOST@|$REAL_HOST|g" -e "s|@REAL_AZ@|$REAL_AZ|g" -e "s|@STATE@|$OS_STATE|g" \
      -e "s|@NOVA_METADATA_PORT@|$NOVA_METADATA_PORT|g" -e "s|@METADATA_SECRET@|$METADATA_SECRET|g" \
      -e "s|@REAL_BRIDGE@|$REAL_BRIDGE|g" "$OS_DIR/real/conf/$1" > "$2.tb-new"
  if grep -q '@[A-Z_]*@' "$2.tb-new"; then echo "unrendered placeholder in $1" >> "$RLOG"; return 1; fi
  put "$2.tb-new" "$2"
}
mkdir -p /etc/neutron/real /etc/libvirt "$OS_STATE/bin" "$OS_STATE/python"
# libvirt's QEMU driver resolves its built-in user and group before it reads qemu.conf (which says root):
# they must exist, as libvirt-daemon-system (not installed: its "default" network NATs outwards) makes them
getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
getent group kvm >/dev/null || groupadd --system kvm
id libvirt-qemu >/dev/null 2>&1 || useradd --system --gid kvm --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin libvirt-qemu
render nova-compute-real.conf  /etc/nova/nova-compute-real.conf
render nova-metadata.conf      /etc/nova/nova-metadata.conf
render neutron-agent-host.conf /etc/neutron/real/agent-host.conf
for a in linuxbridge dhcp l3 metadata; do render "${a}_agent.ini" "/etc/neutron/real/${a}_agent.ini"; done
render qemu.conf     /etc/libvirt/qemu.conf
render libvirtd.conf /etc/libvirt/libvirtd.conf
# neutron-server's private PYTHONPATH (configure.sh makes it afresh from plugins/ when it runs)
cp "$OS_DIR/real/plugins/kupenstack_testbed_zone_schedulers.py" "$OS_STATE/python/.zone.tb-new"
put "$OS_STATE/python/.zone.tb-new" "$OS_STATE/python/kupenstack_testbed_zone_schedulers.py"
mkdir -p "$OS_STATE/real-bin"
cp "$OS_DIR/real/ebtables.sh" "$OS_STATE/real-bin/.eb.tb-new"
put "$OS_STATE/real-bin/.eb.tb-new" "$OS_STATE/real-bin/ebtables"
chmod 755 "$OS_STATE/real-bin/ebtables"
printf '#!/usr/bin/python3\n# KupenStack test bed: nova-api-metadata from the Debian python library\nimport sys\nfrom nova.cmd.api_metadata import main\nif __name__ == "__main__":\n    sys.exit(main())\n' > "$OS_STATE/bin/.md.tb-new"
put "$OS_STATE/bin/.md.tb-new" "$OS_STATE/bin/nova-metadata-api"
chmod 755 "$OS_STATE/bin/nova-metadata-api"

# ---------------------------------------------------------------- shared services' options
set_opts() {  # FILE SECTION KEY VALUE...: rc 0 when written, 3 when it already held them
  local rc=0
  $PY "$OS_DIR/real/ini_set.py" "$@" || rc=$?
  if [ $rc = 0 ]; then echo "$(date -Is) set $*" >> "$RLOG"; elif [ $rc != 3 ]; then return 1; fi
}
set_opts /etc/neutron/plugins/ml2/ml2_conf.ini ml2 mechanism_drivers linuxbridge,l2population,kupenstack_noop
set_opts /etc/neutron/neutron.conf \
  DEFAULT dhcp_agent_notification true \
  DEFAULT network_scheduler_driver kupenstack_testbed_zone_schedulers.ZoneOnlyDhcpScheduler \
  DEFAULT router_scheduler_driver kupenstack_testbed_zone_schedulers.ZoneOnlyL3Scheduler \
  DEFAULT network_auto_schedule true \
  DEFAULT router_auto_schedule false \
  DEFAULT dhcp_agents_per_network 1 \
  experimental linuxbridge true
set_opts /etc/nova/nova.conf \
  DEFAULT default_schedule_zone nova \
  filter_scheduler enabled_filters AvailabilityZoneFilter,ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter

# ---------------------------------------------------------------- restarts
# started_before PID FILE...: the process began before one of FILEs was last written
started_before() {
  local pid=$1 etimes f; shift
  etimes=$(ps -o etimes= -p "$pid" | tr -d ' ')
  [ -n "$etimes" ] || return 1
  for f in "$@"; do [ $(( $(date +%s) - etimes )) -lt "$(stat -c %Y "$f")" ] && return 0; done
  return 1
}
files_of() {  # the files a service reads that this step writes
  case $1 in
    neutron-server) echo /etc/neutron/neutron.conf /etc/neutron/plugins/ml2/ml2_conf.ini "$OS_STATE/python/kupenstack_testbed_zone_schedulers.py" ;;
    nova-api|nova-scheduler) echo /etc/nova/nova.conf ;;
    nova-compute-real) echo /etc/nova/nova.conf /etc/nova/nova-compute-real.conf ;;
    nova-metadata-api) echo /etc/nova/nova.conf /etc/nova/nova-metadata.conf ;;
    libvirtd) echo /etc/libvirt/qemu.conf /etc/libvirt/libvirtd.conf ;;
    neutron-*-agent) a=${1#neutron-}; echo /etc/neutron/neutron.conf /etc/neutron/real/agent-host.conf "/etc/neutron/real/${a%-agent}_agent.ini" "$OS_STATE/real-bin/ebtables" ;;
  esac
}
restart="" pid=""
for s in neutron-server nova-api nova-scheduler $REAL_SERVICES; do
  # shellcheck disable=SC2046
  if pid=$(tb_pid "$s") && started_before "$pid" $(files_of "$s"); then restart="$restart $s"; fi
done
if [ -n "$restart" ]; then
  os_log "real host: configuration changed, restarting$restart"
  # shellcheck disable=SC2086
  os_stop_all $restart
  # shellcheck disable=SC2086
  os_start_all $restart
fi
