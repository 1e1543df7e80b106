#!/bin/sh
# busybox udhcpc's event script: address, MTU, default route and classless static routes (option 121,
# which Neutron's DHCP agent uses for the metadata address on a network without a router)
case "$1" in
  deconfig) ip -4 addr flush dev "$interface"; ip link set "$interface" up ;;
  bound|renew)
    [ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
    ifconfig "$interface" "$ip" netmask "${subnet:-255.255.255.0}"
    if [ -n "$staticroutes" ]; then
      set -- $staticroutes
      while [ $# -ge 2 ]; do ip route replace "$1" via "$2" dev "$interface"; shift 2; done
    fi
    for r in $router; do ip route replace default via "$r" dev "$interface"; break; done ;;
esac
exit 0
