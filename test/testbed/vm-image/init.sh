#!/bin/sh
# /init of the KupenStack test image (busybox, PID 1 of the initramfs; build.sh replaces @VERSION@).
# DHCP on eth0, then the key and user data from the metadata service, printed on the console
# (Nova's console log), then an HTTP responder on port 8080 that names the version and address.
/bin/busybox --install -s /bin
mkdir -p /proc /sys /dev /tmp /run /www
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
VERSION=@VERSION@
say() { echo "$*" > /dev/console; }
say "kupenstack-test-image $VERSION booting"
# the virtio NIC's modules, in dependency order (those built into the kernel are not here)
for m in $(cat /modules.order); do insmod "/modules/$m" 2>/tmp/insmod || say "insmod $m: $(cat /tmp/insmod)"; done
ip link set lo up
i=0
while ! ip link show eth0 >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
ip link set eth0 up
# udhcpc: retries until it has a lease (-t 0 -A 2), then backgrounds to renew it
udhcpc -i eth0 -s /udhcpc.sh -t 0 -T 2 -A 2 -b -O mtu -O staticroutes >/dev/null 2>&1
ADDR=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
say "kupenstack-test-image $VERSION address $ADDR"
# GET PATH from the metadata service: the body when it answers 200 (busybox-static's wget crashes
# when it cannot connect, nc does not)
md_get() {
  printf 'GET %s HTTP/1.0\r\nHost: 169.254.169.254\r\n\r\n' "$1" | nc -w 5 169.254.169.254 80 2>/dev/null | tr -d '\r' > /tmp/md
  head -n1 /tmp/md | grep -q '^HTTP/1\.[01] 200' && sed '1,/^$/d' /tmp/md
}
KEY="" i=0
while [ -z "$KEY" ] && [ $i -lt 60 ]; do
  KEY=$(md_get /latest/meta-data/public-keys/0/openssh-key)
  [ -n "$KEY" ] || sleep 2
  i=$((i + 1))
done
UD=$(md_get /openstack/latest/user_data | head -c 200)
say "kupenstack-test-image $VERSION key ${KEY:-none}"
say "kupenstack-test-image $VERSION user-data ${UD:-none}"
printf 'kupenstack-test-image %s %s\n' "$VERSION" "$ADDR" > /www/index.html
httpd -p 8080 -h /www
say "kupenstack-test-image $VERSION ready port 8080"
while true; do sleep 3600; done
