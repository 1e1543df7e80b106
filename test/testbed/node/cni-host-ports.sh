#!/usr/bin/env bash
# A chained CNI plugin ("ks-host-ports", after the bridge): inside the pod's
# network namespace only, connections to 127.0.0.1 on the test bed's ports
# (OpenStack, the registries, Git, charts: all bound to the host's loopback,
# and Keystone's catalog names 127.0.0.1) are sent to the node IP, where
# KS-NODE-PREROUTING hands them to the host's 127.0.0.1. So a pod reaches the
# peers at the very URLs the host uses. The host's own tables and sysctls are
# untouched; everything set here goes with the pod's namespace.
# Config: {"type": "ks-host-ports", "gateway": "10.89.0.1", "ports": "5000,9696,..."}
set -euo pipefail
conf=$(cat)
case "${CNI_COMMAND:-}" in
  VERSION) echo '{"cniVersion": "1.0.0", "supportedVersions": ["0.4.0", "1.0.0"]}'; exit 0 ;;
  DEL|CHECK) exit 0 ;;
  ADD) ;;
  *) echo "{\"code\": 4, \"msg\": \"unknown CNI_COMMAND ${CNI_COMMAND:-}\"}"; exit 1 ;;
esac
gw=$(jq -r .gateway <<<"$conf")
ports=$(jq -r .ports <<<"$conf")
inside() { nsenter --net="$CNI_NETNS" "$@"; }
# A packet from 127.0.0.1 may leave by the pod's eth0 only with route_localnet, and
# leaves with the pod's address (MASQUERADE), so replies find their way back.
inside sh -c "echo 1 > /proc/sys/net/ipv4/conf/$CNI_IFNAME/route_localnet"
inside iptables -t nat -A OUTPUT -d 127.0.0.1/32 -p tcp -m multiport --dports "$ports" -j DNAT --to-destination "$gw"
inside iptables -t nat -A POSTROUTING -s 127.0.0.1/32 -o "$CNI_IFNAME" -j MASQUERADE
jq -c '.prevResult' <<<"$conf"
