#!/usr/bin/python3
"""Idempotent keystone setup of the test bed (run by configure.sh).

Project "service"; roles admin/service/member/reader (Zed's bootstrap creates
admin/member/reader: verified here, created if missing); service users
glance/placement/nova/neutron/cinder (admin + service role on project
service); catalog services + public/internal/admin endpoints on 127.0.0.1.
One python process instead of ~40 openstack CLI calls (~3 s instead of ~90 s).
Environment: TB_KEYSTONE_PORT TB_ADMIN_PASS TB_SERVICE_PASS TB_REGION
TB_GLANCE_PORT TB_PLACEMENT_PORT TB_NOVA_PORT TB_NEUTRON_PORT TB_CINDER_PORT
"""
import os

import openstack

E = os.environ
region = E["TB_REGION"]
conn = openstack.connect(
    auth_url="http://127.0.0.1:%s/v3" % E["TB_KEYSTONE_PORT"],
    username="admin", password=E["TB_ADMIN_PASS"], project_name="admin",
    user_domain_name="Default", project_domain_name="Default",
    region_name=region, interface="public", identity_api_version="3")
idc = conn.identity

project = (idc.find_project("service", domain_id="default")
           or idc.create_project(name="service", domain_id="default",
                                 description="Service project"))
roles = {}
for r in ("admin", "service", "member", "reader"):
    roles[r] = idc.find_role(r)
    if roles[r] is None:
        print("role %s missing: creating it" % r)
        roles[r] = idc.create_role(name=r)

for name in ("glance", "placement", "nova", "neutron", "cinder"):
    user = idc.find_user(name, domain_id="default")
    if user is None:
        user = idc.create_user(name=name, password=E["TB_SERVICE_PASS"],
                               domain_id="default", is_enabled=True)
    else:
        idc.update_user(user, password=E["TB_SERVICE_PASS"])
    for r in ("admin", "service"):
        idc.assign_project_role_to_user(project, user, roles[r])

catalog = [
    ("glance", "image", "http://127.0.0.1:%s" % E["TB_GLANCE_PORT"]),
    ("placement", "placement", "http://127.0.0.1:%s" % E["TB_PLACEMENT_PORT"]),
    ("nova", "compute", "http://127.0.0.1:%s/v2.1" % E["TB_NOVA_PORT"]),
    ("neutron", "network", "http://127.0.0.1:%s" % E["TB_NEUTRON_PORT"]),
    ("cinderv3", "volumev3",
     "http://127.0.0.1:%s/v3/%%(project_id)s" % E["TB_CINDER_PORT"]),
]
for name, stype, url in catalog:
    svcs = [s for s in idc.services() if s.type == stype]
    svc = svcs[0] if svcs else idc.create_service(
        name=name, type=stype, description=name, is_enabled=True)
    for iface in ("public", "internal", "admin"):
        eps = [e for e in idc.endpoints(service_id=svc.id, interface=iface)
               if e.region_id == region]
        if not eps:
            idc.create_endpoint(service_id=svc.id, interface=iface, url=url,
                                region_id=region, is_enabled=True)
        elif eps[0].url != url:
            idc.update_endpoint(eps[0], url=url)
print("roles ok: %s; catalog ok: %s" % (", ".join(sorted(roles)),
                                        ", ".join(t for _, t, _ in catalog)))
