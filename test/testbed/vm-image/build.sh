#!/bin/bash
# Builds the KupenStack test image: a 16 MiB raw disk (FAT, syslinux) with Debian's kernel and a busybox
# initramfs whose /init (init.sh) takes DHCP on eth0, prints the key and user data from the metadata
# service on the console, and answers HTTP on port 8080. Only Debian's packages: linux-image-amd64 and
# busybox-static are downloaded (apt-get download) and unpacked, never installed on the host; syslinux,
# mtools, dosfstools and cpio are installed (tb_apt). One disk per version:
#   bash test/testbed/vm-image/build.sh [VERSION...]     (default: v1 v2)
# prints one line per version: "VERSION PATH". Cached under $VMI_CACHE by a hash of the recipe and the
# package versions: a second run prints the paths at once.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib.sh"
VMI_CACHE=${VMI_CACHE:-/var/cache/kupenstack-testbed/vm-image}
mkdir -p "$VMI_CACHE/debs" "$VMI_CACHE/disks"
exec 9> "$VMI_CACHE/.lock"
flock 9
tb_apt syslinux syslinux-common mtools dosfstools cpio

# the packages' candidate versions are part of the key: a Debian kernel update makes new disks
versions=$(apt-cache policy linux-image-amd64 busybox-static 2>/dev/null | awk '/Candidate/{print $2}' | tr '\n' ' ')
key=$( { cat "$HERE/build.sh" "$HERE/init.sh" "$HERE/udhcpc.sh"; echo "$versions"; } | sha256sum | cut -c1-16)
versions_wanted=${*:-v1 v2}

fetch_debs() {  # the two .debs, kept in $VMI_CACHE/debs/<key>
  local d="$VMI_CACHE/debs/$key" kpkg
  [ -f "$d/.done" ] && return 0
  rm -rf "$d"; mkdir -p "$d"
  # linux-image-amd64 is a meta package: its dependency names the real kernel package
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$kpkg" ] || { echo "vm-image: no kernel package behind linux-image-amd64" >&2; return 1; }
  (cd "$d" && apt-get -o APT::Sandbox::User=root download -q "$kpkg" busybox-static >/dev/null)
  mkdir -p "$d/root"
  for f in "$d"/*.deb; do dpkg-deb -x "$f" "$d/root"; done
  touch "$d/.done"
}

# modules the virtio NIC needs that this kernel does not build in, in load order
NIC_MODULES="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci failover net_failover virtio_net"

build_one() {  # VERSION -> $VMI_CACHE/disks/<key>-VERSION.raw
  local v=$1 out="$VMI_CACHE/disks/$key-$1.raw" root="$VMI_CACHE/debs/$key/root" w kver m f
  [ -f "$out" ] && { echo "$v $out"; return 0; }
  w=$(mktemp -d "$VMI_CACHE/work.XXXXXX")
  kver=$(ls "$root/lib/modules" | head -n1)
  mkdir -p "$w/initrd/bin" "$w/initrd/modules"
  cp "$root/bin/busybox" "$w/initrd/bin/busybox"
  ln -s busybox "$w/initrd/bin/sh"
  sed "s|@VERSION@|$v|g" "$HERE/init.sh" > "$w/initrd/init"
  cp "$HERE/udhcpc.sh" "$w/initrd/udhcpc.sh"
  chmod 755 "$w/initrd/init" "$w/initrd/udhcpc.sh"
  : > "$w/initrd/modules.order"
  for m in $NIC_MODULES; do
    f=$(find "$root/lib/modules/$kver" -name "$m.ko*" | head -n1)
    [ -n "$f" ] || continue                      # built in
    case $f in
      *.xz) xz -dc "$f" > "$w/initrd/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" > "$w/initrd/modules/$m.ko" ;;
      *) cp "$f" "$w/initrd/modules/$m.ko" ;;
    esac
    echo "$m.ko" >> "$w/initrd/modules.order"
  done
  (cd "$w/initrd" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -9) > "$w/initrd.gz"
  cat > "$w/syslinux.cfg" <<CFG
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  INITRD initrd.gz
  APPEND console=ttyS0,115200 quiet loglevel=3 panic=5
CFG
  # a FAT file system without a partition table (a "superfloppy"): SeaBIOS boots syslinux's boot sector
  mkfs.vfat -C -n KSTEST "$w/disk.raw" 16384 >/dev/null
  syslinux --install "$w/disk.raw"
  mcopy -i "$w/disk.raw" "$root/boot/vmlinuz-$kver" ::vmlinuz
  mcopy -i "$w/disk.raw" "$w/initrd.gz" ::initrd.gz
  mcopy -i "$w/disk.raw" "$w/syslinux.cfg" ::syslinux.cfg
  mv "$w/disk.raw" "$out"
  rm -rf "$w"
  echo "$v $out"
}

fetch_debs
for v in $versions_wanted; do build_one "$v"; done
