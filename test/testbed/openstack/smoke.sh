#!/bin/bash
# Smoke test of the running OpenStack test bed through the openstack CLI and the
# cloud "kupenstack-local" of ~/.config/openstack/clouds.yaml: token, catalog,
# image, flavor, network + subnet, server on that network -> ACTIVE (fake
# driver), volume -> available (fake backend), router with the "public"
# gateway, floating IP.  Creates tbsmoke-* resources and deletes them again
# (KEEP=1 keeps them).  Exit status 1 on any failure.
set -uo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"
unset OS_CLOUD OS_AUTH_URL OS_USERNAME OS_PASSWORD OS_PROJECT_NAME
TMP=$(mktemp -d /tmp/tbsmoke.XXXXXX)
PASS=0 FAIL=0
os() { openstack --os-cloud "$CLOUD_NAME" "$@"; }
ok()  { PASS=$((PASS + 1)); echo "PASS: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; tail -n 5 "$TMP/err" 2>/dev/null | sed 's/^/      /'; }
step() {  # DESCRIPTION CMD... : run, time, count
  local d=$1 t; shift; t=$(date +%s.%N)
  if "$@" > "$TMP/out" 2> "$TMP/err"; then ok "$d ($(os_dt "$t") s)"; else bad "$d"; fi
}
wait_for() {  # KIND NAME WANT TIMEOUT_S
  local s="" i
  for i in $(seq 1 $(( $4 * 2 ))); do
    s=$(os "$1" show "$2" -f value -c status 2>>"$TMP/err")
    [ "$s" = "$3" ] && return 0
    case $s in ERROR|error) break ;; esac
    sleep 0.5
  done
  echo "status $s" >> "$TMP/err"; return 1
}
cleanup() {
  [ "${KEEP:-0}" = 1 ] && { rm -rf "$TMP"; return; }
  {
    for f in $(os floating ip list --tags tbsmoke -f value -c ID); do os floating ip delete "$f"; done
    os server delete --wait tbsmoke-vm
    os volume delete tbsmoke-vol
    os router remove subnet tbsmoke-router tbsmoke-subnet
    os router unset --external-gateway tbsmoke-router
    os router delete tbsmoke-router
    os network delete tbsmoke-net
    os flavor delete tbsmoke-flavor
    os image delete tbsmoke-img
  } >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
T0=$(date +%s.%N)

step "token issue" os token issue -f value -c id
step "catalog has identity image compute network placement volumev3" \
  bash -c 'c=$(openstack --os-cloud '"$CLOUD_NAME"' catalog list -f value -c Type); for t in identity image compute network placement volumev3; do echo "$c" | grep -qx $t || exit 1; done'
step "roles member + reader exist" bash -c "openstack --os-cloud $CLOUD_NAME role show member && openstack --os-cloud $CLOUD_NAME role show reader"
step "external network public + public-subnet" bash -c "openstack --os-cloud $CLOUD_NAME network show public -f value -c router:external | grep -qx True && openstack --os-cloud $CLOUD_NAME subnet show public-subnet -f value -c cidr | grep -qx 203.0.113.0/24"
head -c 1048576 /dev/zero > "$TMP/tiny.img"
step "image create tbsmoke-img (1 MiB raw)" os image create --disk-format raw --container-format bare --file "$TMP/tiny.img" tbsmoke-img
step "flavor create tbsmoke-flavor" os flavor create --vcpus 1 --ram 64 --disk 1 tbsmoke-flavor
step "network create tbsmoke-net" os network create tbsmoke-net
step "subnet create tbsmoke-subnet" os subnet create --network tbsmoke-net --subnet-range 10.250.0.0/24 tbsmoke-subnet
t=$(date +%s.%N)
if os server create --image tbsmoke-img --flavor tbsmoke-flavor --network tbsmoke-net tbsmoke-vm >/dev/null 2>"$TMP/err" \
   && wait_for server tbsmoke-vm ACTIVE 120; then ok "server on tbsmoke-net -> ACTIVE ($(os_dt "$t") s)"; else bad "server -> ACTIVE"; fi
t=$(date +%s.%N)
if os volume create --size 1 tbsmoke-vol >/dev/null 2>"$TMP/err" && wait_for volume tbsmoke-vol available 120; then
  ok "volume -> available ($(os_dt "$t") s)"; else bad "volume -> available"; fi
step "router create tbsmoke-router" os router create tbsmoke-router
step "router set --external-gateway public" os router set --external-gateway public tbsmoke-router
step "router add subnet tbsmoke-subnet" os router add subnet tbsmoke-router tbsmoke-subnet
step "floating ip create on public + attach to server" bash -c "
  fip=\$(openstack --os-cloud $CLOUD_NAME floating ip create --tag tbsmoke public -f value -c floating_ip_address) &&
  openstack --os-cloud $CLOUD_NAME server add floating ip tbsmoke-vm \$fip"
echo "$PASS passed, $FAIL failed ($(os_dt "$T0") s)"
[ "$FAIL" = 0 ]
