"""KupenStack test bed only: an ML2 mechanism driver that binds every port, on
any host, to the first segment offered, without any L2 agent (no OVS, no
linuxbridge, no OVN).

Lets nova (compute_driver = fake.FakeDriver) boot servers onto neutron networks
in the API-only test cloud: ports get binding:vif_type "other" and status
ACTIVE.  No traffic flows anywhere; never use this in a real deployment.
Neutron loads mechanism drivers by entry-point name only: the entry point
neutron.ml2.mechanism_drivers:kupenstack_noop lives in the dist-info next to
this module (configure.sh puts both on neutron-server's PYTHONPATH).
"""
from neutron_lib.api.definitions import portbindings
from neutron_lib import constants
from neutron_lib.plugins.ml2 import api
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class NoopBindMechanismDriver(api.MechanismDriver):

    def initialize(self):
        LOG.info("kupenstack_noop mechanism driver: binding ports without agents")

    @property
    def connectivity(self):
        return portbindings.CONNECTIVITY_L2

    def bind_port(self, context):
        vnic_type = context.current.get(portbindings.VNIC_TYPE,
                                         portbindings.VNIC_NORMAL)
        if vnic_type != portbindings.VNIC_NORMAL:
            return
        for segment in context.segments_to_bind:
            context.set_binding(segment[api.ID],
                                portbindings.VIF_TYPE_OTHER,
                                {portbindings.CAP_PORT_FILTER: False},
                                status=constants.PORT_STATUS_ACTIVE)
            LOG.debug("kupenstack_noop bound port %s to segment %s on host %s",
                      context.current['id'], segment[api.ID], context.host)
            return
