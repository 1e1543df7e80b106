# Shared settings + helpers of the OpenStack test bed (sourced, never executed).
# Builds on ../lib.sh (TB_HOME, tb_dirs, tb_pid, tb_start, tb_stop, tb_fail, ...).
OS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$OS_DIR/../lib.sh"
tb_dirs openstack                       # RUN_DIR, LOG_DIR under $TB_HOME/openstack
OS_STATE="$TB_HOME/openstack"           # every other piece of state lives here too
PY=/usr/bin/python3                     # never a pyenv/venv python: the OpenStack libs are Debian's

ADMIN_PASS=secret SERVICE_PASS=secret DB_PASS=secret REGION=RegionOne
CLOUD_NAME=kupenstack-local
COMPUTE_HOST=aio                        # nova-compute / cinder-volume host name
# fixed ports, all on 127.0.0.1
KEYSTONE_PORT=5000 GLANCE_PORT=9292 PLACEMENT_PORT=8778 NOVA_PORT=8774
NEUTRON_PORT=9696 CINDER_PORT=8776 MARIADB_PORT=3306 RABBIT_PORT=5672
RABBIT_DIST_PORT=25672 EPMD_PORT=4369 MEMCACHED_PORT=11211
# Octavia (configure-octavia.sh): its API, and the health manager's UDP heartbeat port
OCTAVIA_PORT=9876 OCTAVIA_HM_PORT=5555
# The real compute host and its dataplane (configure-real.sh, real/README.md): libvirt + QEMU (TCG)
# under its own host name in availability zone REAL_AZ, Neutron's linuxbridge, DHCP, L3 and metadata
# agents. Its external network "public-real" (flat, physical network "real") is the host bridge
# REAL_BRIDGE holding REAL_GATEWAY in 198.18.77.0/24 (RFC 2544's benchmarking range): not the API-only
# "public" network's 203.0.113.0/24, where this machine kind reaches its package mirror (203.0.113.80)
REAL_HOST=aio-real REAL_AZ=real NOVA_METADATA_PORT=8775
REAL_BRIDGE=kspub0 REAL_CIDR=198.18.77.0/24 REAL_GATEWAY=198.18.77.1/24

# start order (down.sh stops in reverse tiers)
OS_INFRA="epmd mariadb memcached rabbitmq"
os_infra() { [[ " $OS_INFRA " == *" $1 "* ]]; }  # infrastructure (no OpenStack configuration of its own)
OCTAVIA_SERVICES="octavia-api octavia-worker octavia-health-manager octavia-housekeeping"
REAL_AGENTS="neutron-linuxbridge-agent neutron-dhcp-agent neutron-l3-agent neutron-metadata-agent"
REAL_SERVICES="libvirtd nova-metadata-api $REAL_AGENTS nova-compute-real"
OS_SERVICES="$OS_INFRA keystone glance-api placement-api neutron-server nova-api nova-conductor nova-scheduler cinder-api cinder-scheduler cinder-volume nova-compute $REAL_SERVICES $OCTAVIA_SERVICES"

# Debian packages (no nova-compute / cinder-volume packages: they pull libvirt+qemu
# and lvm2+tgt; the fake-driver daemons run from python3-nova / python3-cinder)
OS_PACKAGES="mariadb-server mariadb-client python3-pymysql rabbitmq-server memcached python3-memcache
  uwsgi-core uwsgi-plugin-python3 keystone python3-keystone
  glance-api glance-common python3-glanceclient
  placement-api placement-common python3-osc-placement
  nova-api nova-conductor nova-scheduler nova-common python3-nova
  neutron-server neutron-common python3-neutron
  cinder-api cinder-scheduler cinder-common python3-cinder python3-cinderclient
  python3-openstackclient python3-novaclient python3-neutronclient python3-openstacksdk
  python3-yaml qemu-utils curl iproute2 procps util-linux"
# The real host's packages: installed by configure-real.sh (its own step). libvirt without
# libvirt-daemon-system (whose "default" network would NAT to the outside), QEMU for TCG guests
REAL_PACKAGES="qemu-system-x86 libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients python3-libvirt
  neutron-linuxbridge-agent neutron-dhcp-agent neutron-l3-agent neutron-metadata-agent
  dnsmasq-base haproxy ebtables ipset conntrack bridge-utils"
# Octavia's packages: installed by configure-octavia.sh (its own step, its own marker)
OCTAVIA_PACKAGES="octavia-api octavia-worker octavia-health-manager octavia-housekeeping python3-octaviaclient"

os_log() { tb_log "openstack: $*"; }

# seconds since T0 (date +%s.%N), one decimal
os_dt() { awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $1}"; }

# environment of the admin user (for the openstack CLI / openstacksdk)
os_admin_env() {
  unset OS_CLOUD
  export OS_AUTH_URL="http://127.0.0.1:$KEYSTONE_PORT/v3" OS_IDENTITY_API_VERSION=3
  export OS_AUTH_TYPE=password OS_USERNAME=admin OS_PASSWORD="$ADMIN_PASS" OS_PROJECT_NAME=admin
  export OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default
  export OS_REGION_NAME=$REGION OS_INTERFACE=public OS_COMPUTE_API_VERSION=2.74
}

# --------------------------------------------------------------- services
os_cmd() {  # command line of a service
  case $1 in
    epmd)           echo "epmd -address 127.0.0.1 -port $EPMD_PORT" ;;
    mariadb)        echo "/usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --port=$MARIADB_PORT" ;;
    # the auth_token middleware's token cache, as every real deployment has it: without one, each
    # concurrent request slot of a service keeps its own in-process cache and validates a new token again
    memcached)      echo "memcached -u memcache -l 127.0.0.1 -p $MEMCACHED_PORT -U 0 -m 64" ;;
    rabbitmq)       echo "setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups env HOME=/var/lib/rabbitmq ERL_EPMD_ADDRESS=127.0.0.1 ERL_EPMD_PORT=$EPMD_PORT /usr/lib/rabbitmq/bin/rabbitmq-server" ;;
    # One thread per process, as Kolla and OpenStack-Helm run it under mod_wsgi: Keystone's AuthContextMiddleware keeps
    # the request's token in an attribute of the process's one middleware (self.token), so two threads can swap tokens and
    # a restricted application credential passed the check of another request's password token (201, not 403).
    # uwsgi's HTTP router holds the idle keep-alive connections, so a single-threaded worker is busy only per request.
    keystone)       echo "uwsgi --plugin python3,http --http 127.0.0.1:$KEYSTONE_PORT --http-keepalive --http-auto-chunked --http-timeout 300 --listen 1024 --wsgi-file /usr/bin/keystone-wsgi-public --master --processes 6 --threads 1 --lazy-apps --die-on-term --buffer-size 65535 --need-app --procname-prefix-spaced keystone" ;;
    placement-api)  echo "uwsgi --plugin python3 --http11-socket 127.0.0.1:$PLACEMENT_PORT --wsgi-file /usr/bin/placement-api --master --processes 1 --threads 4 --enable-threads --lazy-apps --die-on-term --buffer-size 65535 --need-app --procname-prefix-spaced placement" ;;
    glance-api)     echo "glance-api --config-file /etc/glance/glance-api.conf" ;;
    neutron-server) echo "env PYTHONPATH=$OS_STATE/python neutron-server --config-file /etc/neutron/neutron.conf --config-file /etc/neutron/plugins/ml2/ml2_conf.ini" ;;
    nova-api|nova-conductor|nova-scheduler) echo "$1 --config-file /etc/nova/nova.conf" ;;
    nova-compute)   echo "$OS_STATE/bin/nova-compute --config-file /etc/nova/nova.conf" ;;
    nova-compute-real) echo "$OS_STATE/bin/nova-compute --config-file /etc/nova/nova.conf --config-file /etc/nova/nova-compute-real.conf" ;;
    nova-metadata-api) echo "$OS_STATE/bin/nova-metadata-api --config-file /etc/nova/nova.conf --config-file /etc/nova/nova-metadata.conf" ;;
    libvirtd)       echo "/usr/sbin/libvirtd -f /etc/libvirt/libvirtd.conf" ;;
    neutron-linuxbridge-agent|neutron-dhcp-agent|neutron-l3-agent|neutron-metadata-agent)
                    local ini=${1#neutron-}; ini=${ini%-agent}
                    echo "$1 --config-file /etc/neutron/neutron.conf --config-file /etc/neutron/real/agent-host.conf --config-file /etc/neutron/real/${ini}_agent.ini" ;;
    cinder-api|cinder-scheduler) echo "$1 --config-file /etc/cinder/cinder.conf" ;;
    octavia-api)    echo "uwsgi --plugin python3 --http11-socket 127.0.0.1:$OCTAVIA_PORT --wsgi-file /usr/bin/octavia-wsgi --master --processes 1 --threads 8 --enable-threads --lazy-apps --die-on-term --buffer-size 65535 --need-app --procname-prefix-spaced octavia-api" ;;
    octavia-worker|octavia-health-manager|octavia-housekeeping) echo "$1 --config-file /etc/octavia/octavia.conf" ;;
    cinder-volume)  echo "env PYTHONPATH=$OS_STATE/python $OS_STATE/bin/cinder-volume --config-file /etc/cinder/cinder.conf" ;;
    *) echo "unknown service $1" >&2; return 1 ;;
  esac
}

os_port() {  # the port a service owns ("" for RPC-only workers)
  case $1 in
    epmd) echo $EPMD_PORT ;; mariadb) echo $MARIADB_PORT ;; rabbitmq) echo $RABBIT_PORT ;;
    memcached) echo $MEMCACHED_PORT ;;
    keystone) echo $KEYSTONE_PORT ;; glance-api) echo $GLANCE_PORT ;;
    placement-api) echo $PLACEMENT_PORT ;; neutron-server) echo $NEUTRON_PORT ;;
    nova-api) echo $NOVA_PORT ;; cinder-api) echo $CINDER_PORT ;; octavia-api) echo $OCTAVIA_PORT ;;
    nova-metadata-api) echo $NOVA_METADATA_PORT ;; *) echo "" ;;
  esac
}

os_url() {  # the URL probed for readiness ("" if none)
  case $1 in
    keystone) echo "http://127.0.0.1:$KEYSTONE_PORT/v3" ;;
    glance-api) echo "http://127.0.0.1:$GLANCE_PORT/" ;;
    placement-api) echo "http://127.0.0.1:$PLACEMENT_PORT/" ;;
    neutron-server) echo "http://127.0.0.1:$NEUTRON_PORT/" ;;
    nova-api) echo "http://127.0.0.1:$NOVA_PORT/" ;;
    cinder-api) echo "http://127.0.0.1:$CINDER_PORT/" ;;
    octavia-api) echo "http://127.0.0.1:$OCTAVIA_PORT/" ;;
    nova-metadata-api) echo "http://127.0.0.1:$NOVA_METADATA_PORT/" ;;
    *) echo "" ;;
  esac
}

os_heartbeat_db() {  # database whose services table a worker reports to
  case $1 in
    nova-conductor|nova-scheduler|nova-compute|nova-compute-real) echo nova ;;
    neutron-*-agent) echo neutron ;;
    cinder-scheduler|cinder-volume) echo cinder ;;
    *) echo "" ;;
  esac
}

# os_heartbeat_where SVC: the SQL condition naming SVC's rows in its heartbeat table (nova's and
# cinder's `services`, neutron's `agents`): the fake and the real nova-compute differ by host only
os_heartbeat_where() {
  case $1 in
    nova-compute)      echo "\`binary\`='nova-compute' AND host='$COMPUTE_HOST' AND deleted=0" ;;
    nova-compute-real) echo "\`binary\`='nova-compute' AND host='$REAL_HOST' AND deleted=0" ;;
    neutron-*-agent)   echo "\`binary\`='$1' AND host='$REAL_HOST'" ;;
    *)                 echo "\`binary\`='$1' AND deleted=0" ;;
  esac
}
# os_heartbeat_sql SVC SELECT-EXPR [SINCE]: a query over SVC's heartbeat rows (newer than SINCE, UTC)
os_heartbeat_sql() {
  local db table=services col=updated_at
  db=$(os_heartbeat_db "$1")
  if [ "$db" = neutron ]; then table=agents col=heartbeat_timestamp; fi
  echo "SELECT ${2//@COL@/$col} FROM $db.$table WHERE $(os_heartbeat_where "$1")${3:+ AND $col >= '$3'}"
}

# os_real_bridge: the real external network's "outside", a bridge on the host with the gateway address
# and no physical port: the host reaches floating IPs, nothing leaves the machine. Refuses a range the
# host already routes elsewhere (a route other than the default one, or an address of another device).
os_real_bridge() {
  local other
  other=$(ip -4 route show to match "${REAL_GATEWAY%/*}" | grep -v "^default " | grep -v " dev $REAL_BRIDGE " || true)
  [ -z "$other" ] || tb_fail neutron-linuxbridge-agent "$REAL_CIDR is already routed on this machine ($other): the real dataplane needs a range of its own (REAL_CIDR in common.sh)"
  ip link show "$REAL_BRIDGE" >/dev/null 2>&1 || ip link add "$REAL_BRIDGE" type bridge
  ip -4 addr show dev "$REAL_BRIDGE" | grep -q " ${REAL_GATEWAY} " || ip addr add "$REAL_GATEWAY" dev "$REAL_BRIDGE"
  ip link set "$REAL_BRIDGE" up
}

os_prepare() {  # directories a service needs before it starts
  case $1 in
    mariadb)  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld ;;
    rabbitmq) mkdir -p /var/log/rabbitmq && chown rabbitmq:rabbitmq /var/log/rabbitmq ;;
    nova-*)   mkdir -p "$OS_STATE"/nova/tmp "$OS_STATE"/nova/instances ;;
    neutron-server) mkdir -p "$OS_STATE"/neutron/tmp ;;
    cinder-*) mkdir -p "$OS_STATE"/cinder/tmp ;;
    glance-api) mkdir -p "$OS_STATE"/glance/images "$OS_STATE"/glance/staging "$OS_STATE"/glance/tasks_work_dir ;;
    octavia-*) mkdir -p "$OS_STATE"/octavia/tmp /var/log/octavia ;;
    libvirtd) mkdir -p /run/libvirt /var/lib/libvirt/qemu /var/log/libvirt/qemu ;;
    neutron-linuxbridge-agent) os_real_bridge ;;
  esac
  case $1 in nova-compute-real) mkdir -p "$OS_STATE"/nova-real/tmp "$OS_STATE"/nova-real/instances ;; esac
  return 0
}

# os_octavia_check SVC: an Octavia daemon without an API does its work: the worker
# consumes the provisioning queue (RabbitMQ lists a consumer of octavia_prov), the
# health manager listens for heartbeats (UDP), housekeeping holds its database
# connection (it cleans the database every 30 s). Prints what it saw; rc 1 when not.
os_octavia_check() {
  local n
  case $1 in
    octavia-worker)
      n=$(setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups env HOME=/var/lib/rabbitmq ERL_EPMD_PORT=$EPMD_PORT \
            timeout 20 /usr/lib/rabbitmq/bin/rabbitmqctl -q list_queues name consumers 2>/dev/null | awk '$1=="octavia_prov"{print $2}')
      echo "octavia_prov consumers: ${n:-none}"; [ "${n:-0}" -ge 1 ] ;;
    octavia-health-manager)
      echo "udp 127.0.0.1:$OCTAVIA_HM_PORT"; ss -Hlun "sport = :$OCTAVIA_HM_PORT" | grep -q "127.0.0.1:$OCTAVIA_HM_PORT" ;;
    octavia-housekeeping)
      n=$(ss -Htnp "dport = :$MARIADB_PORT" 2>/dev/null | grep -c "pid=$(tb_pid octavia-housekeeping)," || true)
      echo "$n database connections"; [ "${n:-0}" -ge 1 ] ;;
    *) return 1 ;;
  esac
}

# os_launch SVC: start SVC in the background in its own process group unless it
# already runs (rc 2).  Fails (tb_fail) if its port is held by a process we did
# not start: we never take over or kill foreign processes.
os_launch() {
  local svc=$1 port pid
  if pid=$(tb_pid "$svc"); then return 2; fi
  port=$(os_port "$svc")
  if [ -n "$port" ] && tb_port_listening "$port"; then
    tb_fail "$svc" "127.0.0.1:$port is already in use by a process this test bed did not start (the OpenStack test bed needs exactly this port; free it and re-run):
$(ss -Hltnp "sport = :$port" 2>/dev/null)"
  fi
  os_prepare "$svc"
  case $svc in neutron-*-agent) tb_netns_run_dir ;; esac
  echo "=== $(date -Is) starting: $(os_cmd "$svc")" >> "$LOG_DIR/$svc.log"
  # shellcheck disable=SC2046
  (cd / && tb_start "$svc" $(os_cmd "$svc"))
  return 0
}

# os_ready SVC SINCE TIMEOUT: the API answers / the worker heartbeated after SINCE (UTC)
os_ready() {
  local svc=$1 since=$2 t=${3:-180} url db i=0 n
  case $svc in
    epmd)     tb_wait_port $EPMD_PORT "$t"; return ;;
    mariadb)  tb_wait_port $MARIADB_PORT "$t" || return 1
              while [ $i -lt $((t * 2)) ]; do
                mysqladmin -uroot ping >/dev/null 2>&1 && return 0; sleep 0.5; i=$((i + 1))
              done; return 1 ;;
    rabbitmq) tb_wait_port $RABBIT_PORT "$t"; return ;;
    memcached) tb_wait_port $MEMCACHED_PORT "$t"; return ;;
    libvirtd) while [ $i -lt $((t * 2)) ]; do
                tb_pid "$svc" >/dev/null || return 1
                virsh -c qemu:///system version >/dev/null 2>&1 && return 0
                sleep 0.5; i=$((i + 1))
              done; return 1 ;;
    octavia-worker|octavia-health-manager|octavia-housekeeping)
              while [ $i -lt $((t * 2)) ]; do
                tb_pid "$svc" >/dev/null || return 1
                os_octavia_check "$svc" >/dev/null && return 0
                sleep 0.5; i=$((i + 1))
              done; return 1 ;;
  esac
  url=$(os_url "$svc")
  if [ -n "$url" ]; then tb_wait_http "$url" "$t"; return; fi
  db=$(os_heartbeat_db "$svc")
  while [ $i -lt $((t * 2)) ]; do
    tb_pid "$svc" >/dev/null || return 1          # died while we waited
    n=$(mysql -uroot -N -e "$(os_heartbeat_sql "$svc" 'COUNT(*)' "$since")" 2>/dev/null || echo 0)
    [ "${n:-0}" -ge 1 ] && return 0
    sleep 0.5; i=$((i + 1))
  done
  return 1
}

# os_start_all [SVC...]: launch every (given) service not yet running, in
# dependency phases; services of a phase start together and a phase begins when
# the previous one is ready.  Running services are reused: they only have to
# answer (APIs) or have heartbeated within the last minute (workers).
os_start_all() {
  local want=" ${*:-$OS_SERVICES} " phase s rc since_new since_old launched reused pt0
  local phases=("epmd mariadb memcached"
                "rabbitmq keystone glance-api placement-api"
                "neutron-server nova-api nova-conductor nova-scheduler cinder-api cinder-scheduler cinder-volume"
                "nova-compute libvirtd nova-metadata-api $REAL_AGENTS"
                "nova-compute-real"
                "$OCTAVIA_SERVICES")
  OS_LAUNCHED=""
  for phase in "${phases[@]}"; do
    since_new=$(date -u -d '-1 second' '+%F %T')
    since_old=$(date -u -d '-75 seconds' '+%F %T')   # report_interval is 10 s
    launched="" reused="" pt0=$(date +%s.%N)
    for s in $phase; do
      [[ $want == *" $s "* ]] || continue
      rc=0; os_launch "$s" || rc=$?
      if [ $rc = 0 ]; then launched="$launched $s"; else reused="$reused $s"; fi
    done
    for s in $reused; do
      os_ready "$s" "$since_old" 60 || tb_fail "$s" "running (pid $(tb_pid "$s" || echo ?)) but not ready after 60 s"
    done
    for s in $launched; do
      os_ready "$s" "$since_new" 180 || tb_fail "$s" "did not become ready (see $LOG_DIR/$s.log)"
      os_log "$s started (pgid $(cat "$RUN_DIR/$s.pid")), ready after $(os_dt "$pt0") s"
    done
    if [ -n "$reused" ]; then os_log "reused running:$reused"; fi
    OS_LAUNCHED="$OS_LAUNCHED$launched"
  done
  return 0
}

# os_stop_all [SVC...]: stop what we started (recorded process groups only):
# OpenStack services together, then rabbitmq, memcached, mariadb, epmd one by one.
os_stop_all() {
  local want=" ${*:-$OS_SERVICES} " s tier1="" infra=""
  for s in $OS_SERVICES; do
    [[ $want == *" $s "* ]] || continue
    if os_infra "$s"; then infra="$s $infra"; else tier1="$tier1 $s"; fi
  done
  [ -n "$tier1" ] && tb_stop $tier1
  for s in $infra; do tb_stop "$s"; done
  return 0
}

# The rendered configuration lives in /etc, the machine's, while its marker lives in the home: a second
# test-bed home on the machine (a fresh-machine run with its own KUPENSTACK_TESTBED_HOME) renders its
# own paths into /etc, and this home's marker alone would still say "configured" (Keystone then looked
# for its fernet keys in the other home). The hash is kept in both; both must match.
OS_ETC_MARKERS=/etc/kupenstack-testbed
# os_configured MARKER HASH: this home's marker and the machine's copy of it both hold HASH
os_configured() {
  [ "$(cat "$1" 2>/dev/null)" = "$2" ] && [ "$(cat "$OS_ETC_MARKERS/$(basename "$1")" 2>/dev/null)" = "$2" ]
}
# os_mark_configured MARKER HASH
os_mark_configured() {
  mkdir -p "$OS_ETC_MARKERS"
  echo "$2" > "$OS_ETC_MARKERS/$(basename "$1")"
  echo "$2" > "$1"
}
