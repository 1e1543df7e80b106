#!/bin/bash
# Bring the OpenStack Zed all-in-one test bed up (loopback only), idempotently:
#   1. apt phase (install.sh): returns at once when every package is installed
#   2. config phase (configure.sh): only when not configured yet or when conf/,
#      plugins/, configure.sh, catalog.py or the settings changed (hash marker)
#   2b. Octavia's own step (configure-octavia.sh): packages, configuration, its
#      database and catalog entry, only when its own marker is stale
#   2c. service_type for access rules (configure-service-type.sh): restarts
#      neutron-server / nova-api only when they run without it
#   3. starts every service that is not running (running ones are reused)
#   4. waits until every API answers and nova conductor/scheduler/compute and
#      cinder scheduler/volume have heartbeated
#   5. ensures the external network "public", the aggregate of the real host (zone "real"), writes the cloud
#      "kupenstack-local" into ~/.config/openstack/clouds.yaml (merged) and
#      $TB_HOME/openstack/admin-openrc
# On failure: the failing service's log tail on stderr, exit status 1.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
cd /
trap 'echo "testbed: openstack up.sh failed at line $LINENO" >&2' ERR
T0=$(date +%s.%N)

# 1. packages
bash "$OS_DIR/install.sh" || tb_fail install "apt phase failed"

# 2. configuration
conf_hash() {
  {
    (cd "$OS_DIR" && find conf plugins -type f | LC_ALL=C sort | xargs sha256sum)
    # Relative names: the same files in another checkout (a worktree, a CI clone) are the same configuration.
    (cd "$OS_DIR" && sha256sum configure.sh catalog.py)
    echo "$ADMIN_PASS $SERVICE_PASS $DB_PASS $REGION $COMPUTE_HOST $OS_STATE"
    echo "$KEYSTONE_PORT $GLANCE_PORT $PLACEMENT_PORT $NOVA_PORT $NEUTRON_PORT $CINDER_PORT $MARIADB_PORT $RABBIT_PORT $RABBIT_DIST_PORT $EPMD_PORT $MEMCACHED_PORT"
  } | sha256sum | cut -d' ' -f1
}
HASH=$(conf_hash)
MARKER="$OS_STATE/configured"
if ! os_configured "$MARKER" "$HASH" || [ ! -d /var/lib/mysql/keystone ]; then
  # services still running with an older configuration must re-read it
  running=""
  for s in $OS_SERVICES; do
    os_infra "$s" && continue
    tb_pid "$s" >/dev/null && running="$running $s"
  done
  if [ -n "$running" ]; then
    os_log "configuration changed: restarting$running"
    os_stop_all $running
  fi
  t=$(date +%s.%N)
  os_log "configuring (~1 min)"
  bash "$OS_DIR/configure.sh" || exit 1
  os_mark_configured "$MARKER" "$HASH"
  os_log "config phase took $(os_dt "$t") s"
fi

# 2b. Octavia: a step of its own with its own marker (configure-octavia.sh), so
#     adding it or changing it never re-runs the main configuration above
bash "$OS_DIR/configure-octavia.sh" || exit 1
# 2c. service_type in Neutron's and Nova's [keystone_authtoken], so access-ruled
#     application credentials work (configure-service-type.sh: its own check)
bash "$OS_DIR/configure-service-type.sh" || exit 1
# 2d. the real compute host and its dataplane (configure-real.sh: packages, its files, the shared
#     services' options it needs; restarts only what runs with a file written after it started)
bash "$OS_DIR/configure-real.sh" || exit 1

# 3. + 4. services
t=$(date +%s.%N)
os_start_all
# map the fake and the real compute host into cell1 (the scheduler also does it every 30 s)
n=$(mysql -uroot -N -e "SELECT COUNT(*) FROM nova_api.host_mappings WHERE host IN ('$COMPUTE_HOST', '$REAL_HOST')" 2>/dev/null || echo 0)
if [ "${n:-0}" != 2 ]; then
  nova-manage cell_v2 discover_hosts >> "$LOG_DIR/nova-manage.log" 2>&1 || tb_fail nova-manage "cell_v2 discover_hosts failed"
fi
if [ -n "$OS_LAUNCHED" ]; then os_log "services ready after $(os_dt "$t") s (started:$OS_LAUNCHED)"; fi

# 5. external network + client configuration
TB_KEYSTONE_PORT=$KEYSTONE_PORT TB_ADMIN_PASS="$ADMIN_PASS" TB_REGION=$REGION TB_CLOUD_NAME=$CLOUD_NAME \
TB_REAL_HOST=$REAL_HOST TB_REAL_AZ=$REAL_AZ TB_REAL_CIDR=$REAL_CIDR TB_REAL_GATEWAY=$REAL_GATEWAY \
  $PY "$OS_DIR/finish.py" "$HOME/.config/openstack/clouds.yaml" >> "$LOG_DIR/finish.log" 2>&1 \
  || tb_fail finish "external network / clouds.yaml step failed"
umask 077
cat > "$OS_STATE/admin-openrc.new" <<RC
# source me: admin of the KupenStack OpenStack test bed (loopback only)
# (the same cloud is "$CLOUD_NAME" in ~/.config/openstack/clouds.yaml)
export OS_AUTH_URL=http://127.0.0.1:$KEYSTONE_PORT/v3
export OS_IDENTITY_API_VERSION=3
export OS_AUTH_TYPE=password
export OS_USERNAME=admin
export OS_PASSWORD=$ADMIN_PASS
export OS_PROJECT_NAME=admin
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_REGION_NAME=$REGION
export OS_INTERFACE=public
export OS_COMPUTE_API_VERSION=2.74
RC
mv "$OS_STATE/admin-openrc.new" "$OS_STATE/admin-openrc"
os_log "up: keystone http://127.0.0.1:$KEYSTONE_PORT/v3, cloud '$CLOUD_NAME', openrc $OS_STATE/admin-openrc ($(os_dt "$T0") s)"
