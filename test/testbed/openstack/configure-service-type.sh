#!/bin/bash
# Access rules' step of the OpenStack test bed (run by up.sh after the other
# configuration steps, before the services start; safe to run alone).
# keystonemiddleware enforces an application credential's access rules only
# when the service's [keystone_authtoken] names its own `service_type`; without
# it, every call made with an access-ruled credential is refused. This step
# writes `service_type` into Neutron's (network) and Nova's (compute) rendered
# configuration and restarts exactly those two services if they run with a
# configuration that lacks it (it started before the file was last written).
# Additive and idempotent: the check is the line in the file and the service's
# start time, so an up bed gets it on its next up.sh, and configure.sh's fresh
# render of /etc (when conf/ changes) gets it again; the main configuration's
# hash (conf/) does not change, so an up bed is not restarted whole. Its
# marker, $OS_STATE/configured-service-type, records when it last held.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
SLOG="$LOG_DIR/configure-service-type.log"
trap 'tb_fail configure-service-type "configure-service-type.sh failed at line $LINENO (log: $SLOG)"' ERR

# SERVICE FILE TYPE, one per line
TARGETS="neutron-server /etc/neutron/neutron.conf network
nova-api /etc/nova/nova.conf compute"

# has_service_type FILE TYPE: [keystone_authtoken] holds `service_type = TYPE`
has_service_type() {
  awk -v want="$2" '
    /^\[/ { in_sec = ($0 == "[keystone_authtoken]") }
    in_sec && /^[ \t]*service_type[ \t]*=/ { v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]*$/, "", v); if (v == want) found = 1 }
    END { exit found ? 0 : 1 }' "$1"
}

# set_service_type FILE TYPE: (re)writes the option right under the section header, atomically
set_service_type() {
  awk -v want="$2" '
    /^\[/ { in_sec = ($0 == "[keystone_authtoken]") }
    in_sec && /^[ \t]*service_type[ \t]*=/ { next }
    { print }
    $0 == "[keystone_authtoken]" { print "service_type = " want }' "$1" > "$1.tb-new"
  grep -q "^service_type = $2\$" "$1.tb-new" || { echo "no [keystone_authtoken] section in $1" >> "$SLOG"; return 1; }
  chmod --reference="$1" "$1.tb-new"
  chown --reference="$1" "$1.tb-new"
  mv "$1.tb-new" "$1"
}

# started_before PID FILE: the process began before FILE was last written (it read an older one)
started_before() {
  local etimes
  etimes=$(ps -o etimes= -p "$1" | tr -d ' ')
  [ -n "$etimes" ] && [ $(( $(date +%s) - etimes )) -lt "$(stat -c %Y "$2")" ]
}

restart="" pid=""
while read -r svc file type; do
  [ -f "$file" ] || tb_fail configure-service-type "$file is missing: run the main configuration first (up.sh)"
  if ! has_service_type "$file" "$type"; then
    echo "$(date -Is) $file: service_type = $type" >> "$SLOG"
    set_service_type "$file" "$type"
  fi
  # A running service that read the file before the line was there (also after a run killed before its restart).
  if pid=$(tb_pid "$svc") && started_before "$pid" "$file"; then restart="$restart $svc"; fi
done <<< "$TARGETS"

if [ -n "$restart" ]; then
  os_log "service_type for access rules: restarting$restart"
  # shellcheck disable=SC2086
  os_stop_all $restart
  # shellcheck disable=SC2086
  os_start_all $restart
fi
# The marker says what was last made sure of (the files themselves are the check).
echo "network compute $(date -Is)" > "$OS_STATE/configured-service-type"
