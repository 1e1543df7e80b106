#!/usr/bin/env bash
# Builds the OpenStack service images the cloud-lifecycle tests run as real pods,
# from Debian's packages (bookworm: Zed, 2022.2; OSI_SUITE=trixie: 2025.1), and pushes
# them to the test bed's registry:
#   bash test/testbed/os-images/build.sh [--push] [SERVICE...]   # default: every service of OSI_SERVICES
# A root file system from mmdebstrap (variant essential, --no-install-recommends, at its caller's
# priority: nice 19 and idle I/O under prebuild-images.sh, raised when the end-to-end files start),
# Debian's maintainer scripts answered "no" to every database/endpoint question
# (../openstack/preseed.sh) and never starting a daemon (mmdebstrap's policy-rc.d);
# buildah imports it as one layer (from scratch, add, commit), no systemd.
# - mariadb, memcached, rabbitmq: one root file system each, the service's command as on the host.
# - the OpenStack services (common.sh OSI_SHARED): one root file system per suite with all their
#   packages (`base`), pushed once; each service's image is a manifest over that layer with its own
#   config (the command as on the host: uwsgi or the daemon; its labels), written to the registry
#   beside it (a blob mount, a config blob, a manifest), so it needs --push.
# Cached by a version key (the recipe, the packages and the candidate versions of the main
# packages): an image whose annotation io.kupenstack.os-image holds the key is not built again;
# a pushed one is not pushed again while the registry has it. The .debs are kept in
# $OSI_CACHE/debs between builds.
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

candidate() { apt-cache policy "$(osi_main "$1")" 2>/dev/null | sed -n 's/^  Candidate: //p'; }
# base_key: what the shared root file system is made of (computed once per run)
base_key_memo=""
base_key() {
  if [ -z "$base_key_memo" ]; then
    base_key_memo=$({ echo "r$OSI_REVISION $OSI_SUITE base"; for s in $OSI_SHARED; do echo "$s $(candidate "$s")"; done
      osi_base_packages; os_preseed; sha256sum < "$HERE/build.sh"
      (cd "$HERE/../openstack/plugins" && find . -type f | LC_ALL=C sort | xargs sha256sum); } | sha256sum | cut -c1-24)
  fi
  echo "$base_key_memo"
}
# key SVC: what the image is made of
key() {
  if osi_shared "$1"; then
    { echo "r$OSI_REVISION $OSI_SUITE $1"; base_key; osi_packages "$1"; osi_cmd "$1"; } | sha256sum | cut -c1-24
    return
  fi
  { echo "r$OSI_REVISION $OSI_SUITE $1 $(candidate "$1")"; osi_packages "$1"; osi_cmd "$1"; os_preseed
    sha256sum < "$HERE/build.sh"; } | sha256sum | cut -c1-24
}

# rootfs NAME PACKAGES: $OSI_CACHE/work-NAME/rootfs.tar, made by mmdebstrap (log: $OSI_CACHE/NAME.build.log)
rootfs() {
  local name=$1 packages=$2 work="$OSI_CACHE/work-$1" log="$OSI_CACHE/$1.build.log"
  rm -rf "$work"; mkdir -p "$work"
  os_preseed > "$work/preseed"
  # shellcheck disable=SC2016
  if ! mmdebstrap --mode=root --variant=essential --quiet \
      --include="$(echo "$packages" | tr ' ' ,)" \
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
    echo "os-images: mmdebstrap of $name failed (log above, whole log: $log); the packages: $packages" >&2
    exit 1
  fi
}

# build SVC KEY: SVC's image (or, for SVC=base, the OpenStack services' shared one) in the local storage
build() {
  local svc=$1 k=$2 image work log ctr packages t0=$SECONDS
  if [ "$svc" = base ]; then image="$OSI_REPO/base:$OSI_RELEASE"; packages=$(osi_base_packages); else image=$(osi_image "$svc"); packages=$(osi_packages "$svc"); fi
  work="$OSI_CACHE/work-$svc"
  log="$OSI_CACHE/$svc.build.log"
  osi_log "building $image from Debian $OSI_SUITE: $packages"
  rootfs "$svc" "$packages"
  ctr=$(ib from --quiet scratch)
  # shellcheck disable=SC2064
  trap "ib rm '$ctr' >/dev/null 2>&1 || true" EXIT
  ib add --quiet "$ctr" "$work/rootfs.tar" / >>"$log" 2>&1
  if [ "$svc" = base ]; then
    # The no-op ML2 driver the host runs (ports bind without agents), on a path neutron's chart puts on PYTHONPATH.
    ib copy --quiet "$ctr" "$HERE/../openstack/plugins" /usr/local/lib/kupenstack-testbed/python >>"$log" 2>&1
    # nova-compute with the fake driver without Debian's nova-compute package (it pulls libvirt and qemu), as on the host.
    printf '#!/usr/bin/python3\n# KupenStack test bed: nova-compute from the Debian python library\nimport sys\nfrom nova.cmd.compute import main\nif __name__ == "__main__":\n    sys.exit(main())\n' > "$work/nova-compute"
    ib copy --quiet --chmod 0755 "$ctr" "$work/nova-compute" /usr/local/bin/nova-compute >>"$log" 2>&1
    ib config --env PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
      --label org.opencontainers.image.description="KupenStack test bed: the OpenStack services ($OSI_SHARED) from Debian $OSI_SUITE ($OSI_RELEASE)" \
      --annotation io.kupenstack.os-image="$k" --annotation io.kupenstack.packages="$packages" "$ctr" >>"$log" 2>&1
  else
    ib config --env PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
      --label org.opencontainers.image.title="$svc" \
      --label org.opencontainers.image.description="KupenStack test bed: $svc from Debian $OSI_SUITE ($OSI_RELEASE)" \
      --annotation io.kupenstack.os-image="$k" \
      --annotation io.kupenstack.packages="$packages" \
      --cmd "$(osi_cmd "$svc")" "$ctr" >>"$log" 2>&1
  fi
  ib commit --quiet --rm "$ctr" "$image" >>"$log" 2>&1
  trap - EXIT
  rm -rf "$work"
  ib images --quiet --filter dangling=true | xargs -r -n1 sh -c 'buildah --root "$0" --runroot "$1" --storage-driver vfs rmi "$2" >/dev/null 2>&1 || true' "$IMAGE_STORAGE" "$IMAGE_RUNROOT"
  osi_log "built $image in $((SECONDS - t0)) s"
  echo "$((SECONDS - t0))" > "$OSI_CACHE/keys/$svc.seconds"
}

# The registry's API, for the shared services' manifests (distribution 2.8 on loopback, anonymous).
reg="http://$IMAGE_REGISTRY"
oci_manifest=application/vnd.oci.image.manifest.v1+json
repo_of() { echo "${OSI_REPO#"$IMAGE_REGISTRY"/}/$1"; }
# registry_key NAME: the io.kupenstack.os-image annotation of NAME's manifest in the registry ("" when absent)
registry_key() {
  curl -sf -m 10 -H "Accept: $oci_manifest" "$reg/v2/$(repo_of "$1")/manifests/$OSI_RELEASE" 2>/dev/null | jq -r '.annotations["io.kupenstack.os-image"] // ""' 2>/dev/null || true
}

# manifest SVC KEY: SVC's image in the registry, made from the pushed base: its layer mounted (not
# uploaded again), a config with SVC's command and labels, a manifest annotated with SVC's key.
manifest() {
  local svc=$1 k=$2 work="$OSI_CACHE/work-$1" from to cfg d code loc sep size
  from=$(repo_of base); to=$(repo_of "$svc")
  rm -rf "$work"; mkdir -p "$work"
  curl -sf -m 30 -H "Accept: $oci_manifest" "$reg/v2/$from/manifests/$OSI_RELEASE" > "$work/base.json" \
    || { echo "os-images: the registry has no $from:$OSI_RELEASE to make $svc's image from" >&2; exit 1; }
  curl -sf -m 30 "$reg/v2/$from/blobs/$(jq -r .config.digest "$work/base.json")" > "$work/base-config.json"
  jq -c --argjson cmd "$(osi_cmd "$svc")" --arg title "$svc" --arg desc "KupenStack test bed: $svc from Debian $OSI_SUITE ($OSI_RELEASE)" \
    '.config.Cmd = $cmd | .config.Labels = ((.config.Labels // {}) + {"org.opencontainers.image.title": $title, "org.opencontainers.image.description": $desc})' \
    "$work/base-config.json" > "$work/config.json"
  cfg="sha256:$(sha256sum < "$work/config.json" | cut -d' ' -f1)"
  for d in $(jq -r '.layers[].digest' "$work/base.json"); do
    code=$(curl -s -m 60 -o /dev/null -w '%{http_code}' -X POST "$reg/v2/$to/blobs/uploads/?mount=$d&from=$from")
    [ "$code" = 201 ] || { echo "os-images: the registry did not mount $d from $from into $to (HTTP $code)" >&2; exit 1; }
  done
  loc=$(curl -sf -m 30 -X POST -D - -o /dev/null "$reg/v2/$to/blobs/uploads/" | sed -n 's/^[Ll]ocation: *//p' | tr -d '\r')
  case $loc in http*) ;; *) loc="$reg$loc" ;; esac
  sep='?'; case $loc in *\?*) sep='&' ;; esac
  curl -sf -m 60 -o /dev/null -X PUT -H 'content-type: application/octet-stream' --data-binary "@$work/config.json" "$loc${sep}digest=$cfg" \
    || { echo "os-images: uploading $svc's config to $to failed" >&2; exit 1; }
  size=$(stat -c %s "$work/config.json")
  jq -c --arg cfg "$cfg" --argjson size "$size" --arg key "$k" --arg packages "$(osi_packages "$svc")" \
    '.config.digest = $cfg | .config.size = $size | .annotations = ((.annotations // {}) + {"io.kupenstack.os-image": $key, "io.kupenstack.packages": $packages})' \
    "$work/base.json" > "$work/manifest.json"
  curl -sf -m 60 -o /dev/null -X PUT -H "content-type: $oci_manifest" --data-binary "@$work/manifest.json" "$reg/v2/$to/manifests/$OSI_RELEASE" \
    || { echo "os-images: putting $svc's manifest into $to failed" >&2; exit 1; }
  echo "sha256:$(sha256sum < "$work/manifest.json" | cut -d' ' -f1)" > "$OSI_CACHE/keys/$svc.digest"
  rm -rf "$work"
}

# current SVC KEY: built with this key and, with --push, pushed with it and still in the registry
# (a shared service: its manifest in the registry carries the key)
current() {
  local image repo
  if osi_shared "$1"; then [ "$(registry_key "$1")" = "$2" ]; return; fi
  image=$(osi_image "$1")
  [ "$(ib inspect --type image --format '{{index .ImageAnnotations "io.kupenstack.os-image"}}' "$image" 2>/dev/null || true)" = "$2" ] || return 1
  [ $push = 0 ] && return 0
  repo=${image#"$IMAGE_REGISTRY"/}; repo=${repo%:*}
  [ "$(cat "$OSI_CACHE/keys/$1.pushed" 2>/dev/null)" = "$2" ] \
    && [ "$(curl -s -o /dev/null -m 5 -w "%{http_code}" -H "Accept: application/vnd.oci.image.manifest.v1+json" "http://$IMAGE_REGISTRY/v2/$repo/manifests/$OSI_RELEASE" || true)" = 200 ]
}
# report SVC: the line this script prints per service
report() {
  local local_name; local_name=$(osi_image "$1"); osi_shared "$1" && local_name="$OSI_REPO/base:$OSI_RELEASE"
  echo "$1 $(osi_image "$1") $( [ $push = 1 ] && cat "$OSI_CACHE/keys/$1.digest" || echo -) $(cat "$OSI_CACHE/keys/$1.seconds" 2>/dev/null || echo 0) $(ib images --format '{{.Size}}' "$local_name" 2>/dev/null | head -n1)"
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
command -v jq >/dev/null || bash -c '. "$1/../lib.sh"; tb_apt jq' _ "$HERE"
for svc in $services; do
  k=$(key "$svc")
  t0=$SECONDS
  if osi_shared "$svc"; then
    # Its image is a manifest in the registry over the base's layer: the base built and pushed first.
    [ $push = 1 ] || { echo "os-images: $svc's image is made in the registry from the shared OpenStack layer: run with --push" >&2; exit 1; }
    if ! current "$svc" "$k"; then
      bk=$(base_key); base="$OSI_REPO/base:$OSI_RELEASE"
      if [ "$(ib inspect --type image --format '{{index .ImageAnnotations "io.kupenstack.os-image"}}' "$base" 2>/dev/null || true)" != "$bk" ]; then build base "$bk"; fi
      if [ "$(registry_key base)" != "$bk" ]; then
        ib push --quiet --tls-verify=false --digestfile "$OSI_CACHE/keys/base.digest" "$base" "docker://$base" >&2 \
          || { echo "os-images: pushing $base failed (is the registry peer up on $IMAGE_REGISTRY?)" >&2; exit 1; }
        osi_log "pushed $base ($(cat "$OSI_CACHE/keys/base.digest"))"
      fi
      manifest "$svc" "$k"
      echo "$((SECONDS - t0))" > "$OSI_CACHE/keys/$svc.seconds"
      osi_log "made $(osi_image "$svc") from $base in the registry ($(cat "$OSI_CACHE/keys/$svc.digest"))"
    fi
    report "$svc"
    continue
  fi
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
