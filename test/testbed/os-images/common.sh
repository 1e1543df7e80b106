# shellcheck shell=bash disable=SC2034
# Shared by os-images/build.sh (sourced after ../image/common.sh, never
# executed): OpenStack service images made from Debian's packages. The suite is
# the parameter (OSI_SUITE=trixie bash build.sh …): bookworm = Zed (2022.2), the
# packages the host test bed runs; trixie = Epoxy (2025.1), the release the
# real cloud upgrades to. No image comes from a public registry: each is one
# layer, a root file system mmdebstrap makes from Debian's archive, committed
# by buildah (chroot, vfs).
OSI_SUITE=${OSI_SUITE:-bookworm}
case $OSI_SUITE in
  bookworm) OSI_RELEASE=2022.2 ;;
  trixie) OSI_RELEASE=2025.1 ;;
  *) echo "os-images: OSI_SUITE=$OSI_SUITE is not one of bookworm (2022.2), trixie (2025.1)" >&2; exit 1 ;;
esac
# Bump when build.sh makes a different root file system from the same packages.
OSI_REVISION=1
OSI_REPO="$IMAGE_REGISTRY/kupenstack-testbed/openstack"
# Per suite: its own .debs and version keys (bookworm's keep their first path: its images stay current).
if [ "$OSI_SUITE" = bookworm ]; then OSI_CACHE="$IMAGE_CACHE/openstack"; else OSI_CACHE="$IMAGE_CACHE/openstack-$OSI_SUITE"; fi

# A suite other than the host's: the version key's `apt-cache policy` must read that suite's
# package lists, kept in $OSI_CACHE/apt (refreshed daily) and named by APT_CONFIG; mmdebstrap
# sets its own APT_CONFIG, so the build itself is not affected.
osi_apt_lists() {
  local d="$OSI_CACHE/apt" host
  host=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ "$OSI_SUITE" = "$host" ] && return 0
  mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
  [ -e "$d/status" ] || : > "$d/status"
  printf 'deb http://deb.debian.org/debian %s main\ndeb http://deb.debian.org/debian %s-updates main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
    "$OSI_SUITE" "$OSI_SUITE" "$OSI_SUITE" > "$d/sources.list"
  printf 'Dir::Etc::sourcelist "%s";\nDir::Etc::sourceparts "-";\nDir::State::lists "%s";\nDir::State::status "%s";\nDir::Cache "%s";\n' \
    "$d/sources.list" "$d/lists" "$d/status" "$d/cache" > "$d/apt.conf"
  export APT_CONFIG="$d/apt.conf"
  if [ -z "$(find "$d/lists" -maxdepth 1 -name '*_Packages' -mmin -1440 2>/dev/null | head -n1)" ]; then
    apt-get -q -o APT::Sandbox::User=root update >"$d/update.log" 2>&1 \
      || { tail -n 5 "$d/update.log" >&2; echo "os-images: apt-get update of $OSI_SUITE's lists failed (log: $d/update.log)" >&2; exit 1; }
  fi
}
osi_apt_lists
# The infrastructure first: the cloud's install order.
OSI_SERVICES="mariadb memcached rabbitmq keystone glance placement neutron nova"
# The OpenStack services share one root file system per suite (the union of their packages, as the
# host test bed installs them side by side): one mmdebstrap, one layer pushed and unpacked on the node,
# instead of five that each carried the same Python stack (3.0 GB of bookworm, 2.8 GB of trixie).
# Each service still has its own image (its command, labels and key): a manifest over that layer.
OSI_SHARED="keystone glance placement neutron nova"
osi_shared() { case " $OSI_SHARED " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# osi_packages SVC: what goes into the image (--no-install-recommends, as on the host)
osi_packages() {
  case $1 in
    # mariadb-client: mysqldump and mysql for the backup and db-init Jobs
    mariadb)   echo "mariadb-server mariadb-client" ;;
    memcached) echo "memcached" ;;
    rabbitmq)  echo "rabbitmq-server" ;;
    # the openstack CLI too: the bootstrap and ks-* Jobs register users and the catalog with it
    keystone)  echo "keystone python3-keystone uwsgi-core uwsgi-plugin-python3 python3-pymysql python3-memcache python3-openstackclient mariadb-client curl" ;;
    glance)    echo "glance-api glance-common python3-pymysql python3-memcache curl" ;;
    placement) echo "placement-api placement-common uwsgi-core uwsgi-plugin-python3 python3-pymysql python3-memcache curl" ;;
    neutron)   echo "neutron-server neutron-common python3-neutron python3-pymysql python3-memcache curl" ;;
    nova)      echo "nova-api nova-conductor nova-scheduler nova-common python3-nova python3-pymysql python3-memcache curl" ;;
    *) echo "os-images: unknown service $1 (one of: $OSI_SERVICES)" >&2; return 1 ;;
  esac
}

# osi_main SVC: the package whose version names the image's content
osi_main() {
  case $1 in
    mariadb) echo mariadb-server ;; rabbitmq) echo rabbitmq-server ;; glance) echo glance-api ;;
    placement) echo placement-api ;; neutron) echo neutron-server ;; nova) echo nova-api ;;
    *) echo "$1" ;;
  esac
}

# osi_cmd SVC: the image's default command, as the host test bed starts the service
# (openstack/common.sh os_cmd), listening on every address of the pod instead of 127.0.0.1;
# the charts give their own commands (config from a Secret, ports from values).
osi_cmd() {
  case $1 in
    mariadb)   echo '["/usr/sbin/mariadbd","--user=mysql","--bind-address=0.0.0.0","--port=3306"]' ;;
    memcached) echo '["memcached","-u","memcache","-l","0.0.0.0","-p","11211","-U","0","-m","64"]' ;;
    rabbitmq)  echo '["/usr/lib/rabbitmq/bin/rabbitmq-server"]' ;;
    keystone)  echo '["uwsgi","--plugin","python3","--http11-socket","0.0.0.0:5000","--wsgi-file","/usr/bin/keystone-wsgi-public","--master","--processes","2","--threads","16","--enable-threads","--lazy-apps","--die-on-term","--buffer-size","65535","--need-app"]' ;;
    glance)    echo '["glance-api","--config-file","/etc/glance/glance-api.conf"]' ;;
    placement) echo '["uwsgi","--plugin","python3","--http11-socket","0.0.0.0:8778","--wsgi-file","/usr/bin/placement-api","--master","--processes","1","--threads","4","--enable-threads","--lazy-apps","--die-on-term","--buffer-size","65535","--need-app"]' ;;
    neutron)   echo '["neutron-server","--config-file","/etc/neutron/neutron.conf","--config-file","/etc/neutron/plugins/ml2/ml2_conf.ini"]' ;;
    nova)      echo '["nova-api","--config-file","/etc/nova/nova.conf"]' ;;
  esac
}

# osi_base_packages: the shared root file system's packages (every shared service's, once each)
osi_base_packages() {
  local s
  for s in $OSI_SHARED; do osi_packages "$s"; done | tr ' ' '\n' | LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}

osi_image() { echo "$OSI_REPO/$1:$OSI_RELEASE"; }
osi_log() { echo "[os-images $(date +%H:%M:%S)] $*" >&2; }
