"""KupenStack test bed only: DHCP and L3 schedulers that place a network or a
router on an agent only when it asks for the availability zone of the real
dataplane (availability_zone_hints contains ZONE).

The shared test bed's Neutron serves hundreds of networks and routers made by
API-level tests; with the stock schedulers each one would get a dnsmasq, a
DHCP port and a router namespace on the one real host.  Only what a test puts
in zone "real" (a network's or router's availabilityZoneHints) is wired; the
rest stays API-only, as before the real dataplane existed.
configure-real.sh copies this module onto neutron-server's PYTHONPATH.
"""
from neutron.common import utils
from neutron.scheduler import dhcp_agent_scheduler
from neutron.scheduler import l3_agent_scheduler

ZONE = "real"


def _in_zone(resource):
    return ZONE in utils.get_az_hints(resource)


class ZoneOnlyDhcpScheduler(dhcp_agent_scheduler.AZAwareWeightScheduler):

    def schedule(self, plugin, context, resource):
        if not _in_zone(resource):
            return []
        return super().schedule(plugin, context, resource)

    def auto_schedule_networks(self, plugin, context, host):
        # network_auto_schedule is off; scheduling happens on create only
        return False


class ZoneOnlyL3Scheduler(l3_agent_scheduler.AZLeastRoutersScheduler):

    def _get_candidates(self, plugin, context, sync_router):
        if not _in_zone(sync_router):
            return []
        return super()._get_candidates(plugin, context, sync_router)

    def _get_routers_can_schedule(self, plugin, context, routers, l3_agent):
        return super()._get_routers_can_schedule(
            plugin, context, [r for r in routers if _in_zone(r)], l3_agent)
