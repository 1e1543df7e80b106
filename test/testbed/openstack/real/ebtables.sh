#!/bin/bash
# ebtables for the real host's Neutron agents (configure-real.sh installs it as $OS_STATE/real-bin/ebtables,
# first on their privsep daemon's PATH only). Debian 12's ebtables-nft (iptables 1.8.9) cannot delete a
# rule with an --among-src match by its text ("RULE_DELETE failed (Invalid argument)"); the linuxbridge
# agent deletes each port's MAC rule that way, fails, and retries the port for ever, so security group
# changes never reached iptables. Such a delete is done by the rule's number instead; all else is as is.
err=$(/usr/sbin/ebtables "$@" 2>&1 >/dev/null) && exit 0
rc=$?
args=("$@")
table=filter d=-1
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in -t) table=${args[i + 1]} ;; -D) d=$i ;; esac
done
if [ "$d" -ge 0 ] && [[ " $* " == *" --among-src "* ]]; then
  chain=${args[d + 1]} rule="${args[*]:d+2}"
  n=$(/usr/sbin/ebtables -t "$table" --concurrent -L "$chain" --Ln 2>/dev/null | awk -v r="$rule" '$1 ~ /^[0-9]+$/ { n = $1; $1 = ""; sub(/^ /, ""); if ($0 == r) { print n; exit } }')
  [ -n "$n" ] && exec /usr/sbin/ebtables -t "$table" --concurrent -D "$chain" "$n"
fi
echo "$err" >&2
exit $rc
