#!/bin/bash
# apt phase of the OpenStack test bed (called by up.sh; safe to run alone).
# Returns at once when every package is installed.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

# shellcheck disable=SC2086
want=$(echo $OS_PACKAGES | wc -w)
have=$(dpkg-query -W -f='${Status}\n' $OS_PACKAGES 2>/dev/null | grep -c '^install ok installed$' || true)
[ "$have" = "$want" ] && exit 0

T0=$(date +%s.%N)
os_log "installing Debian packages (OpenStack Zed, ~2 min on a fresh machine)"
# Debian's maintainer scripts would set up databases, users and endpoints: answered "no" (preseed.sh).
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/preseed.sh"
os_preseed | debconf-set-selections
# tb_apt: policy-rc.d (maintainer scripts never start services), apt-get update
# once, then installs what is missing (--no-install-recommends)
# shellcheck disable=SC2086
tb_apt $OS_PACKAGES
os_log "apt phase took $(os_dt "$T0") s"
