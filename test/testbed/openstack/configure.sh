#!/bin/bash
# Config phase of the OpenStack test bed (run by up.sh when the marker
# $OS_STATE/configured is missing or its hash no longer matches conf/,
# plugins/, configure.sh, catalog.py and the settings).  Idempotent:
#   renders conf/ into /etc, puts the plugins + daemon wrappers under
#   $OS_STATE, creates databases + users, runs every db sync, bootstraps
#   keystone (fernet) and registers the catalog on 127.0.0.1.
# Starts mariadb + keystone if needed and leaves them running (up.sh goes on).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
CLOG="$LOG_DIR/configure.log"
: > "$CLOG"
trap 'tb_fail configure "configure.sh failed at line $LINENO (log: $CLOG)"' ERR
T0=$(date +%s.%N)
run() { echo "+ $*" >> "$CLOG"; "$@" >> "$CLOG" 2>&1; }

# ---------------------------------------------------------------- files
render() {  # render TEMPLATE DEST
  sed -e "s|@DB_PASS@|$DB_PASS|g" -e "s|@SERVICE_PASS@|$SERVICE_PASS|g" \
      -e "s|@KEYSTONE_PORT@|$KEYSTONE_PORT|g" -e "s|@GLANCE_PORT@|$GLANCE_PORT|g" \
      -e "s|@PLACEMENT_PORT@|$PLACEMENT_PORT|g" -e "s|@NOVA_PORT@|$NOVA_PORT|g" \
      -e "s|@NEUTRON_PORT@|$NEUTRON_PORT|g" -e "s|@CINDER_PORT@|$CINDER_PORT|g" \
      -e "s|@MARIADB_PORT@|$MARIADB_PORT|g" -e "s|@RABBIT_PORT@|$RABBIT_PORT|g" \
      -e "s|@RABBIT_DIST_PORT@|$RABBIT_DIST_PORT|g" -e "s|@REGION@|$REGION|g" \
      -e "s|@MEMCACHED_PORT@|$MEMCACHED_PORT|g" \
      -e "s|@HOST@|$COMPUTE_HOST|g" -e "s|@STATE@|$OS_STATE|g" "$OS_DIR/conf/$1" > "$2.tb-new"
  grep -q '@[A-Z_]*@' "$2.tb-new" && { echo "unrendered placeholder in $1" >> "$CLOG"; return 1; }
  chmod "${3:-640}" "$2.tb-new"
  mv "$2.tb-new" "$2"
}
mkdir -p /etc/keystone /etc/glance /etc/placement /etc/nova /etc/neutron/plugins/ml2 \
         /etc/cinder /etc/rabbitmq /etc/mysql/mariadb.conf.d
render keystone.conf     /etc/keystone/keystone.conf
render glance-api.conf   /etc/glance/glance-api.conf
render placement.conf    /etc/placement/placement.conf
render nova.conf         /etc/nova/nova.conf
render neutron.conf      /etc/neutron/neutron.conf
render ml2_conf.ini      /etc/neutron/plugins/ml2/ml2_conf.ini
render cinder.conf       /etc/cinder/cinder.conf
render mariadb.cnf       /etc/mysql/mariadb.conf.d/99-kupenstack-testbed.cnf 644
render rabbitmq-env.conf /etc/rabbitmq/rabbitmq-env.conf 644

# plugins (ML2 driver + its entry point, fake cinder driver) on a private
# PYTHONPATH used only by neutron-server and cinder-volume
rm -rf "$OS_STATE/python"; mkdir -p "$OS_STATE/python" "$OS_STATE/bin"
cp -r "$OS_DIR/plugins/." "$OS_STATE/python/"
# nova-compute / cinder-volume without Debian's packages of the same name
# (they would pull libvirt + qemu, lvm2 + tgt): same code, from python3-nova/-cinder
for d in "nova-compute nova.cmd.compute" "cinder-volume cinder.cmd.volume"; do
  set -- $d
  printf '#!/usr/bin/python3\n# KupenStack test bed: %s from the Debian python library\nimport sys\nfrom %s import main\nif __name__ == "__main__":\n    sys.exit(main())\n' "$1" "$2" > "$OS_STATE/bin/$1"
  chmod 755 "$OS_STATE/bin/$1"
done
mkdir -p "$OS_STATE"/nova/tmp "$OS_STATE"/nova/instances "$OS_STATE"/neutron/tmp \
         "$OS_STATE"/glance/images "$OS_STATE"/glance/staging "$OS_STATE"/glance/tasks_work_dir \
         "$OS_STATE"/keystone/fernet-keys "$OS_STATE"/keystone/credential-keys "$OS_STATE"/cinder/tmp
chmod 700 "$OS_STATE"/keystone/fernet-keys "$OS_STATE"/keystone/credential-keys
os_log "config files rendered"

# ---------------------------------------------------------------- mariadb
[ -d /var/lib/mysql/mysql ] || run mariadb-install-db --user=mysql --datadir=/var/lib/mysql
os_start_all mariadb
SQL=""
for db in keystone glance placement neutron nova_api nova nova_cell0 cinder; do
  SQL+="CREATE DATABASE IF NOT EXISTS $db;"
done
for u in keystone glance placement neutron nova cinder; do
  for h in localhost 127.0.0.1; do
    SQL+="CREATE USER IF NOT EXISTS '$u'@'$h' IDENTIFIED BY '$DB_PASS';"
    SQL+="ALTER USER '$u'@'$h' IDENTIFIED BY '$DB_PASS';"
    if [ "$u" = nova ]; then
      for db in nova_api nova nova_cell0; do SQL+="GRANT ALL PRIVILEGES ON $db.* TO '$u'@'$h';"; done
    else
      SQL+="GRANT ALL PRIVILEGES ON $u.* TO '$u'@'$h';"
    fi
  done
done
run mysql -uroot -e "$SQL FLUSH PRIVILEGES;"
os_log "databases + users ok"

# ---------------------------------------------------------------- schemas
# keystone first (the catalog needs it); the other schemas are independent:
# sync them concurrently while keystone boots (one log per chain)
t=$(date +%s.%N)
sync_chain() {  # NAME CMD...  (commands separated by ";;")
  local name=$1; shift
  local log="$LOG_DIR/db-sync-$name.log" cmd=()
  : > "$log"
  for a in "$@" ";;"; do
    if [ "$a" = ";;" ]; then
      echo "+ ${cmd[*]}" >> "$log"; "${cmd[@]}" >> "$log" 2>&1 || { echo "FAILED: ${cmd[*]}" >> "$log"; return 1; }
      cmd=()
    else cmd+=("$a"); fi
  done
}
CHAINS="glance placement nova neutron cinder"
sync_chain glance glance-manage --config-file /etc/glance/glance-api.conf db_sync & p_glance=$!
sync_chain placement placement-manage db sync & p_placement=$!
sync_chain nova nova-manage api_db sync ";;" nova-manage cell_v2 map_cell0 ";;" \
  bash -c "nova-manage cell_v2 list_cells 2>/dev/null | grep -q ' cell1 ' || nova-manage cell_v2 create_cell --name=cell1 --verbose" ";;" \
  nova-manage db sync & p_nova=$!
sync_chain neutron neutron-db-manage --config-file /etc/neutron/neutron.conf \
  --config-file /etc/neutron/plugins/ml2/ml2_conf.ini upgrade head & p_neutron=$!
sync_chain cinder cinder-manage db sync & p_cinder=$!

run keystone-manage db_sync
run keystone-manage fernet_setup --keystone-user root --keystone-group root
run keystone-manage credential_setup --keystone-user root --keystone-group root
run keystone-manage bootstrap --bootstrap-password "$ADMIN_PASS" \
  --bootstrap-username admin --bootstrap-project-name admin --bootstrap-role-name admin \
  --bootstrap-service-name keystone --bootstrap-region-id "$REGION" \
  --bootstrap-admin-url "http://127.0.0.1:$KEYSTONE_PORT/v3/" \
  --bootstrap-internal-url "http://127.0.0.1:$KEYSTONE_PORT/v3/" \
  --bootstrap-public-url "http://127.0.0.1:$KEYSTONE_PORT/v3/"
os_log "keystone db + fernet + bootstrap ok ($(os_dt "$t") s)"

# ---------------------------------------------------------------- catalog
os_start_all keystone
t=$(date +%s.%N)
TB_KEYSTONE_PORT=$KEYSTONE_PORT TB_ADMIN_PASS="$ADMIN_PASS" TB_SERVICE_PASS="$SERVICE_PASS" \
TB_REGION=$REGION TB_GLANCE_PORT=$GLANCE_PORT TB_PLACEMENT_PORT=$PLACEMENT_PORT \
TB_NOVA_PORT=$NOVA_PORT TB_NEUTRON_PORT=$NEUTRON_PORT TB_CINDER_PORT=$CINDER_PORT \
  run $PY "$OS_DIR/catalog.py"
os_log "keystone users, roles + catalog ok ($(os_dt "$t") s): $(tail -n 1 "$CLOG")"

for c in $CHAINS; do
  pv="p_$c"
  wait "${!pv}" || { cat "$LOG_DIR/db-sync-$c.log" >> "$CLOG"; trap - ERR; tb_fail configure "$c db sync failed"; }
done
os_log "glance/placement/nova/neutron/cinder schemas ok"
os_log "configure finished in $(os_dt "$T0") s"
