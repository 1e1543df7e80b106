#!/usr/bin/env bash
# Builds the OpenStack service images the cloud-lifecycle tests run as real pods,
# from Debian's packages (bookworm: Zed, 2022.2), and pushes them to the test
# bed's registry:
#   bash test/testbed/os-images/build.sh [--push] [SERVICE...]   # default: every service of OSI_SERVICES
# Per service: mmdebstrap (variant essential, --no-install-recommends, at its caller's priority:
# nice 19 and idle I/O under prebuild-images.sh, raised when the end-to-end files start)
# makes a root file system with the service's packages (common.sh osi_packages),
# Debian's maintainer scripts answered "no" to every database/endpoint question
# (../openstack/preseed.sh) and never starting a daemon (mmdebstrap's
# policy-rc.d); buildah imports it as one layer (from scratch, add, commit) with
# the service's command as on the host (uwsgi or the daemon; no systemd).
# Cached by a version key (the recipe, the packages and the candidate version of
# the service's main package): an image whose annotation io.kupenstack.os-image
# holds the key is not built again; a pushed one is not pushed again while the
# registry has it. The .debs are kept in $OSI_CACHE/debs between builds.
# Prints `SERVICE IMAGE DIGEST SECONDS SIZE` per service on stdout. A failed
# build stops with the tail of its log and exit status 1.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../image/common.sh"
. "$HERE/common.sh"
. "$HERE/../openstack/preseed.sh"
push=0
if [ "${1:-}" = --push ]; then push=1; shift; fi
services=${*:-$OSI_SERVICES}
for s in $services; do osi_packages "$s" >/dev/null || exit 1; done

mkdir -p "$OSI_CACHE/debs" "$OSI_CACHE/keys"
mirror=http://deb.debian.org/debian

# key SVC: what the image is made of
key() {
  local main candidate
  main=$(osi_main "$1")
  candidate=$(apt-cache policy "$main" 2>/dev/null | sed -n 's/^  Candidate: //p')
  { echo "r$OSI_REVISION $OSI_SUITE $1 $candidate"; osi_packages "$1"; osi_cmd "$1"; os_preseed
    sha256sum < "$HERE/build.sh"; [ "$1" = neutron ] && (cd "$HERE/../openstack/plugins" && find . -type f | LC_ALL=C sort | xargs sha256sum)
    true; } | sha256sum | cut -c1-24
}

build() {
  local svc=$1 k=$2 image work log ctr t0=$SECONDS
  image=$(osi_image "$svc")
  work="$OSI_CACHE/work-$svc"
  log="$OSI_CACHE/$svc.build.log"
  rm -rf "$work"; mkdir -p "$work"
  osi_log "building $image from Debian $OSI_SUITE: $(osi_packages "$svc")"
  os_preseed > "$work/preseed"
  # shellcheck disable=SC2016
  if ! mmdebstrap --mode=root --variant=essential --quiet \
      --include="$(osi_packages "$svc" | tr ' ' ,)" \
      --aptopt='APT::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
      --setup-hook="sync-in $OSI_CACHE/debs /var/cache/apt/archives" \
      --essential-hook="copy-in $work/preseed /tmp" \
      --essential-hook='chroot "$1" debconf-set-selections /tmp/preseed && rm "$1"/tmp/preseed' \
      --customize-hook="sync-out /var/cache/apt/archives $OSI_CACHE/debs" \
      --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*.log "$1"/var/log/apt/* "$1"/var/lib/mysql/*' \
      "$OSI_SUITE" "$work/rootfs.tar" \
      "deb $mirror $OSI_SUITE main" "deb $mirror $OSI_SUITE-updates main" \
      "deb http://deb.debian.org/debian-security $OSI_SUITE-security main" \
      >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "os-images: mmdebstrap of $svc failed (log above, whole log: $log); the packages: $(osi_packages "$svc")" >&2
    exit 1
  fi
  ctr=$(ib from --quiet scratch)
  # shellcheck disable=SC2064
  trap "ib rm '$ctr' >/dev/null 2>&1 || true" EXIT
  ib add --quiet "$ctr" "$work/rootfs.tar" / >>"$log" 2>&1
  if [ "$svc" = neutron ]; then
    # The no-op ML2 driver the host runs (ports bind without agents), on a path the chart puts on PYTHONPATH.
    ib copy --quiet "$ctr" "$HERE/../openstack/plugins" /usr/local/lib/kupenstack-testbed/python >>"$log" 2>&1
  fi
  if [ "$svc" = nova ]; then
    # nova-compute with the fake driver without Debian's nova-compute package (it pulls libvirt and qemu), as on the host.
    printf '#!/usr/bin/python3\n# KupenStack test bed: nova-compute from the Debian python library\nimport sys\nfrom nova.cmd.compute import main\nif __name__ == "__main__":\n    sys.exit(main())\n' > "$work/nova-compute"
    ib copy --quiet --chmod 0755 "$ctr" "$work/nova-compute" /usr/local/bin/nova-compute >>"$log" 2>&1
  fi
  ib config --env PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
    --label org.opencontainers.image.title="$svc" \
    --label org.opencontainers.image.description="KupenStack test bed: $svc from Debian $OSI_SUITE ($OSI_RELEASE)" \
    --annotation io.kupenstack.os-image="$k" \
    --annotation io.kupenstack.packages="$(osi_packages "$svc")" \
    --cmd "$(osi_cmd "$svc")" "$ctr" >>"$log" 2>&1
  ib commit --quiet --rm "$ctr" "$image" >>"$log" 2>&1
  trap - EXIT
  rm -rf "$work"
  ib images --quiet --filter dangling=true | xargs -r -n1 sh -c 'buildah --root "$0" --runroot "$1" --storage-driver vfs rmi "$2" >/dev/null 2>&1 || true' "$IMAGE_STORAGE" "$IMAGE_RUNROOT"
  osi_log "built $image in $((SECONDS - t0)) s"
  echo "$((SECONDS - t0))" > "$OSI_CACHE/keys/$svc.seconds"
}

# current SVC KEY: built with this key and, with --push, pushed with it and still in the registry
current() {
  local image repo
  image=$(osi_image "$1")
  [ "$(ib inspect --type image --format '{{index .ImageAnnotations "io.kupenstack.os-image"}}' "$image" 2>/dev/null || true)" = "$2" ] || return 1
  [ $push = 0 ] && return 0
  repo=${image#"$IMAGE_REGISTRY"/}; repo=${repo%:*}
  [ "$(cat "$OSI_CACHE/keys/$1.pushed" 2>/dev/null)" = "$2" ] \
    && [ "$(curl -s -o /dev/null -m 5 -w "%{http_code}" -H "Accept: application/vnd.oci.image.manifest.v1+json" "http://$IMAGE_REGISTRY/v2/$repo/manifests/$OSI_RELEASE" || true)" = 200 ]
}
# report SVC: the line this script prints per service
report() {
  echo "$1 $(osi_image "$1") $( [ $push = 1 ] && cat "$OSI_CACHE/keys/$1.digest" || echo -) $(cat "$OSI_CACHE/keys/$1.seconds" 2>/dev/null || echo 0) $(ib images --format '{{.Size}}' "$(osi_image "$1")" 2>/dev/null | head -n1)"
}

# Everything current: no lock taken (a test calling this does not wait for another build).
all=1
for svc in $services; do current "$svc" "$(key "$svc")" || { all=0; break; }; done
if [ $all = 1 ]; then
  for svc in $services; do report "$svc"; done
  exit 0
fi

image_lock
image_tools
for svc in $services; do
  k=$(key "$svc")
  image=$(osi_image "$svc")
  have=$(ib inspect --type image --format '{{index .ImageAnnotations "io.kupenstack.os-image"}}' "$image" 2>/dev/null || true)
  if [ "$have" = "$k" ]; then osi_log "$image is current (key $k)"; else build "$svc" "$k"; fi
  if [ $push = 1 ] && ! current "$svc" "$k"; then
    ib push --quiet --tls-verify=false --digestfile "$OSI_CACHE/keys/$svc.digest" "$image" "docker://$image" >&2 \
      || { echo "os-images: pushing $image failed (is the registry peer up on $IMAGE_REGISTRY?)" >&2; exit 1; }
    echo "$k" > "$OSI_CACHE/keys/$svc.pushed"
    osi_log "pushed $image ($(cat "$OSI_CACHE/keys/$svc.digest"))"
  fi
  report "$svc"
done
