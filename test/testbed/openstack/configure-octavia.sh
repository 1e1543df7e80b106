#!/bin/bash
# Octavia's step of the OpenStack test bed (run by up.sh after the main
# configuration; safe to run alone once mariadb and keystone can start).
# Additive and idempotent, with its own marker ($OS_STATE/configured-octavia,
# a hash of octavia/, this script and its settings), so adding Octavia never
# re-runs the main configuration nor restarts the services others use:
#   1. installs Octavia Zed from Debian's packages (returns at once when installed)
#   2. only when the marker is missing or stale: renders octavia/octavia.conf,
#      makes the CA the create flow signs amphora certificates with, the
#      database + its schema, the keystone user, the load-balancer service and
#      its endpoints, and Octavia's roles (member implies load-balancer_member:
#      Octavia's default policy asks for that role, the agent holds member)
# The daemons are started by up.sh (os_start_all, last phase) like the others.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
OLOG="$LOG_DIR/configure-octavia.log"
trap 'tb_fail configure-octavia "configure-octavia.sh failed at line $LINENO (log: $OLOG)"' ERR
T0=$(date +%s.%N)
run() { echo "+ $*" >> "$OLOG"; "$@" >> "$OLOG" 2>&1; }

# ---------------------------------------------------------------- packages
# shellcheck disable=SC2086
if [ "$(dpkg-query -W -f='${Status}\n' $OCTAVIA_PACKAGES 2>/dev/null | grep -c '^install ok installed$' || true)" != "$(echo $OCTAVIA_PACKAGES | wc -w)" ]; then
  os_log "installing Octavia's Debian packages"
  . "$OS_DIR/preseed.sh"
  os_preseed | debconf-set-selections
  # shellcheck disable=SC2086
  tb_apt $OCTAVIA_PACKAGES
fi

octavia_hash() {
  {
    (cd "$OS_DIR" && find octavia -type f | LC_ALL=C sort | xargs sha256sum)
    (cd "$OS_DIR" && sha256sum configure-octavia.sh)
    echo "$SERVICE_PASS $DB_PASS $REGION $OS_STATE $KEYSTONE_PORT $MARIADB_PORT $RABBIT_PORT $MEMCACHED_PORT $OCTAVIA_PORT $OCTAVIA_HM_PORT"
  } | sha256sum | cut -d' ' -f1
}
HASH=$(octavia_hash)
MARKER="$OS_STATE/configured-octavia"
if os_configured "$MARKER" "$HASH" && [ -d /var/lib/mysql/octavia ]; then exit 0; fi
: > "$OLOG"

# Octavia daemons still running with an older configuration must re-read it (only they).
running=""
for s in $OCTAVIA_SERVICES; do tb_pid "$s" >/dev/null && running="$running $s"; done
if [ -n "$running" ]; then
  os_log "Octavia's configuration changed: restarting$running"
  # shellcheck disable=SC2086
  os_stop_all $running
fi
os_log "configuring Octavia"

# ---------------------------------------------------------------- files
mkdir -p /etc/octavia "$OS_STATE/octavia/tmp" "$OS_STATE/octavia/certs" /var/log/octavia
sed -e "s|@DB_PASS@|$DB_PASS|g" -e "s|@SERVICE_PASS@|$SERVICE_PASS|g" \
    -e "s|@KEYSTONE_PORT@|$KEYSTONE_PORT|g" -e "s|@MARIADB_PORT@|$MARIADB_PORT|g" \
    -e "s|@RABBIT_PORT@|$RABBIT_PORT|g" -e "s|@MEMCACHED_PORT@|$MEMCACHED_PORT|g" \
    -e "s|@OCTAVIA_PORT@|$OCTAVIA_PORT|g" -e "s|@OCTAVIA_HM_PORT@|$OCTAVIA_HM_PORT|g" \
    -e "s|@STATE@|$OS_STATE|g" "$OS_DIR/octavia/octavia.conf" > /etc/octavia/octavia.conf.tb-new
if grep -q '@[A-Z_]*@' /etc/octavia/octavia.conf.tb-new; then echo "unrendered placeholder in octavia.conf" >> "$OLOG"; false; fi
chmod 640 /etc/octavia/octavia.conf.tb-new
mv /etc/octavia/octavia.conf.tb-new /etc/octavia/octavia.conf
# The create flow signs a certificate for each (no-op) amphora: a CA of the test bed's own.
certs="$OS_STATE/octavia/certs"
if [ ! -s "$certs/ca.pem" ] || [ ! -s "$certs/ca.key" ]; then
  umask 077
  run openssl genrsa -aes256 -passout pass:kupenstack-testbed -out "$certs/ca.key" 2048
  run openssl req -x509 -new -key "$certs/ca.key" -passin pass:kupenstack-testbed -days 3650 \
    -subj "/CN=kupenstack-testbed-octavia-ca" -out "$certs/ca.pem"
  umask 022
fi

# ---------------------------------------------------------------- database
os_start_all mariadb
SQL="CREATE DATABASE IF NOT EXISTS octavia;"
for h in localhost 127.0.0.1; do
  SQL+="CREATE USER IF NOT EXISTS 'octavia'@'$h' IDENTIFIED BY '$DB_PASS';"
  SQL+="ALTER USER 'octavia'@'$h' IDENTIFIED BY '$DB_PASS';"
  SQL+="GRANT ALL PRIVILEGES ON octavia.* TO 'octavia'@'$h';"
done
run mysql -uroot -e "$SQL FLUSH PRIVILEGES;"
t=$(date +%s.%N)
run octavia-db-manage --config-file /etc/octavia/octavia.conf upgrade head
os_log "octavia database ok ($(os_dt "$t") s)"

# ---------------------------------------------------------------- keystone
# ~20 CLI calls, minutes under load: skipped when done with the same settings
# and Keystone still knows the octavia user.
os_start_all keystone
t=$(date +%s.%N)
os_admin_env
osc() { echo "+ openstack $*" >> "$OLOG"; openstack "$@" 2>>"$OLOG"; }
KS_HASH=$(echo "$SERVICE_PASS $REGION $KEYSTONE_PORT $OCTAVIA_PORT $(sed -n '/^# -* keystone$/,$p' "$0" | sha256sum)" | sha256sum | cut -d' ' -f1)
KS_MARKER="$OS_STATE/configured-octavia-keystone"
if [ "$(cat "$KS_MARKER" 2>/dev/null)" != "$KS_HASH" ] || ! osc user show octavia --domain default -f value -c id >/dev/null; then
if ! osc user show octavia --domain default -f value -c id >/dev/null; then
  osc user create octavia --domain default --password "$SERVICE_PASS" -f value -c id >/dev/null
else
  osc user set octavia --domain default --password "$SERVICE_PASS"
fi
for r in admin service; do osc role add --user octavia --user-domain default --project service --project-domain default "$r"; done
# Octavia's roles (its default policy reads them); member implies load-balancer_member
for r in load-balancer_member load-balancer_observer load-balancer_global_observer load-balancer_admin load-balancer_quota_admin; do
  osc role show "$r" -f value -c id >/dev/null || osc role create "$r" -f value -c id >/dev/null
done
if ! osc implied role list -f value -c 'Prior Role Name' -c 'Implied Role Name' | grep -qx 'member load-balancer_member'; then
  osc implied role create member --implied-role load-balancer_member >/dev/null
fi
svc=$(osc service list -f value -c ID -c Type | awk '$2=="load-balancer"{print $1; exit}')
[ -n "$svc" ] || svc=$(osc service create load-balancer --name octavia --description "Octavia (no-op drivers)" -f value -c id)
url="http://127.0.0.1:$OCTAVIA_PORT"
for iface in public internal admin; do
  ep=$(osc endpoint list --service "$svc" --interface $iface --region "$REGION" -f value -c ID -c URL)
  if [ -z "$ep" ]; then
    osc endpoint create --region "$REGION" "$svc" $iface "$url" >/dev/null
  elif [ "${ep#* }" != "$url" ]; then
    osc endpoint set --url "$url" "${ep%% *}"
  fi
done
echo "$KS_HASH" > "$KS_MARKER"
os_log "octavia keystone user, roles + load-balancer endpoint ok ($(os_dt "$t") s)"
fi

os_mark_configured "$MARKER" "$HASH"
os_log "Octavia configured in $(os_dt "$T0") s"
