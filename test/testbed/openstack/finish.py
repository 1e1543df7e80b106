#!/usr/bin/python3
"""Last step of up.sh (idempotent, one python process):

1. the external provider network "public" (flat, physnet "public",
   router:external, not shared) and its subnet "public-subnet" 203.0.113.0/24
   (TEST-NET-3, no DHCP, pool .10-.250), created only if missing;
2. the real dataplane's external network "public-real" (TB_REAL_CIDR) and the aggregate of the real compute host, availability zone TB_REAL_AZ;
3. the cloud "kupenstack-local" in the user's clouds.yaml
   (argv[1], normally ~/.config/openstack/clouds.yaml), merged: every other
   entry of an existing file is kept; the file is only rewritten if the entry
   changed (comments of a rewritten file are lost: yaml round trip).
Environment: TB_KEYSTONE_PORT TB_ADMIN_PASS TB_REGION TB_CLOUD_NAME
"""
import os
import sys
import tempfile

import openstack
import yaml

E = os.environ
region = E["TB_REGION"]
auth = {
    "auth_url": "http://127.0.0.1:%s/v3" % E["TB_KEYSTONE_PORT"],
    "username": "admin", "password": E["TB_ADMIN_PASS"],
    "project_name": "admin",
    "user_domain_name": "Default", "project_domain_name": "Default",
}

# ------------------------------------------------------------ public network
conn = openstack.connect(region_name=region, interface="public",
                         identity_api_version="3", **auth)
net_api = conn.network
nets = list(net_api.networks(name="public", is_router_external=True))
if nets:
    net = nets[0]
else:
    net = net_api.create_network(
        name="public", is_router_external=True, is_shared=False,
        provider_network_type="flat", provider_physical_network="public",
        description="KupenStack test bed external network (no traffic)")
    print("created network public %s" % net.id)
if not list(net_api.subnets(name="public-subnet", network_id=net.id)):
    sub = net_api.create_subnet(
        name="public-subnet", network_id=net.id, ip_version=4,
        cidr="203.0.113.0/24", gateway_ip="203.0.113.1",
        is_dhcp_enabled=False,
        allocation_pools=[{"start": "203.0.113.10", "end": "203.0.113.250"}])
    print("created subnet public-subnet %s" % sub.id)

# ------------------------------------------------------------ real external network
# "public-real": the external network of the real dataplane (configure-real.sh); its "outside" is the
# host bridge holding the gateway, so the host reaches floating IPs; nothing routes further
real_cidr = E.get("TB_REAL_CIDR")
if real_cidr:
    gw = E["TB_REAL_GATEWAY"].split("/")[0]
    base = real_cidr.split("/")[0].rsplit(".", 1)[0]
    rnets = list(net_api.networks(name="public-real", is_router_external=True))
    rnet = rnets[0] if rnets else net_api.create_network(
        name="public-real", is_router_external=True, is_shared=False,
        provider_network_type="flat", provider_physical_network="real",
        description="KupenStack test bed: external network of the real dataplane (host bridge)")
    if not list(net_api.subnets(name="public-real-subnet", network_id=rnet.id)):
        net_api.create_subnet(
            name="public-real-subnet", network_id=rnet.id, ip_version=4,
            cidr=real_cidr, gateway_ip=gw, is_dhcp_enabled=False,
            allocation_pools=[{"start": base + ".10", "end": base + ".250"}])
        print("created network public-real %s (%s)" % (rnet.id, real_cidr))

# ------------------------------------------------------------ real host's zone
# The real compute host (configure-real.sh) in its aggregate, whose availability zone is the one tests
# ask for when they want a VM that boots; a server without a zone stays on the fake host.
real_host, real_az = E.get("TB_REAL_HOST"), E.get("TB_REAL_AZ")
if real_host and list(conn.compute.services(host=real_host, binary="nova-compute")):
    aggs = [a for a in conn.compute.aggregates() if a.name == real_az]
    agg = aggs[0] if aggs else conn.compute.create_aggregate(name=real_az, availability_zone=real_az)
    if real_host not in (agg.hosts or []):
        conn.compute.add_host_to_aggregate(agg, real_host)
        print("added %s to aggregate %s (zone %s)" % (real_host, real_az, real_az))

# ------------------------------------------------------------ clouds.yaml
path = os.path.realpath(sys.argv[1])   # keep a symlinked clouds.yaml a symlink
entry = {
    "auth": auth,
    "region_name": region,
    "interface": "public",
    "identity_api_version": 3,
    "compute_api_version": "2.74",
}
data = {}
if os.path.exists(path):
    with open(path) as f:
        try:
            data = yaml.safe_load(f) or {}
        except yaml.YAMLError as e:
            sys.exit("%s is not valid YAML, not touching it: %s" % (path, e))
    if not isinstance(data, dict) or not isinstance(data.get("clouds", {}), dict):
        sys.exit("%s: unexpected structure (no 'clouds' mapping), not touching it" % path)
clouds = data.get("clouds") or {}
if clouds.get(E["TB_CLOUD_NAME"]) != entry:
    clouds[E["TB_CLOUD_NAME"]] = entry
    data["clouds"] = clouds
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0o600
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".clouds.yaml.")
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(data, f, default_flow_style=False, sort_keys=False)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    print("wrote cloud %s into %s" % (E["TB_CLOUD_NAME"], path))
