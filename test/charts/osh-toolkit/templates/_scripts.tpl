{{/*
Real containers: the scripts of the Jobs every service chart shares (helm-toolkit's
scripts/_db-init.py.tpl, _ks-service.sh.tpl, _ks-endpoints.sh.tpl and _ks-user.sh.tpl do
these jobs in OSH), over the mysql client and keystoneauth of the image the chart names for
them (the keystone image). Every credential comes from the environment
(the Secret <chart>-run-env), never from a command line. Each script is idempotent: a Job
run again (a new release_uuid, a retried pod) finds its work done and says so.
*/}}
{{- define "tk.script.db-init" -}}
#!/bin/sh
# The database(s) and the service's user (root's password from the environment, never on a command line).
set -eu
export MYSQL_PWD="$DB_ROOT_PASSWORD"
# The chart's mariadb serves no TLS (the pod network of one node); mariadb-client 11 (trixie) requires TLS unless told.
for db in $DB_NAME ${DB_EXTRA_NAMES:-}; do
mysql --skip-ssl -h "$DB_HOST" -u root <<SQL
CREATE DATABASE IF NOT EXISTS \`$db\`;
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'%';
SQL
echo "database $db and user $DB_USER ready on $DB_HOST"
done
{{- end -}}

{{/*
The ks-* Jobs are Python over keystoneauth (the keystone image's): one token per Job instead
of one per openstack CLI call (each took 5-10 s at load 10), a new password never on a
command line (the CLI takes one only there), and a deadline on every request: seen on the
test bed, one request waited 9 min on a connection Keystone never answered. A request that
fails or times out fails the pod and the Job starts it again; nothing is decided from a list
that did not arrive.
*/}}
{{- define "tk.script.keystoneSession" -}}
import os
from keystoneauth1 import session
from keystoneauth1.identity import v3

e = os.environ
base = e["OS_AUTH_URL"].rstrip("/")
s = session.Session(timeout=60, auth=v3.Password(auth_url=base, username=e["OS_USERNAME"], password=e["OS_PASSWORD"], project_name=e["OS_PROJECT_NAME"],
                                                 user_domain_name=e["OS_USER_DOMAIN_NAME"], project_domain_name=e["OS_PROJECT_DOMAIN_NAME"]))
{{- end -}}

{{- define "tk.script.ks-service" -}}
#!/usr/bin/python3
# The catalog's service entry, once: type and name from the chart's own endpoint.
{{ include "tk.script.keystoneSession" . }}

name, kind = e["SERVICE_NAME"], e["SERVICE_TYPE"]
if [x for x in s.get(f"{base}/services", params={"type": kind}).json()["services"] if x["name"] == name]:
    print(f"service {name} ({kind}) is in the catalog")
else:
    s.post(f"{base}/services", json={"service": {"name": name, "type": kind, "description": f"KupenStack: {name}"}})
    print(f"service {name} ({kind}) created")
{{- end -}}

{{- define "tk.script.ks-endpoints" -}}
#!/usr/bin/python3
# One endpoint per interface in the region: created when missing, replaced when its URL differs.
{{ include "tk.script.keystoneSession" . }}

name, kind, url, region = e["SERVICE_NAME"], e["SERVICE_TYPE"], e["SERVICE_URL"], e["REGION"]
ids = [x["id"] for x in s.get(f"{base}/services", params={"type": kind}).json()["services"] if x["name"] == name]
if len(ids) != 1:
    raise SystemExit(f"ks-endpoints: {len(ids)} services named {name} of type {kind} in the catalog (ks-service makes one)")
for iface in ("admin", "internal", "public"):
    have = s.get(f"{base}/endpoints", params={"service_id": ids[0], "interface": iface, "region_id": region}).json()["endpoints"]
    if len(have) == 1 and have[0]["url"] == url:
        print(f"{iface} endpoint of {kind} is {url}")
        continue
    for old in have:
        s.delete(f"{base}/endpoints/{old['id']}")
    s.post(f"{base}/endpoints", json={"endpoint": {"service_id": ids[0], "interface": iface, "region_id": region, "url": url}})
    print(f"{iface} endpoint of {kind} set to {url}")
{{- end -}}

{{- define "tk.script.ks-user" -}}
#!/usr/bin/python3
# The service's own user: its domain and project, its password (set again: the Secret is the truth), its role there.
{{ include "tk.script.keystoneSession" . }}


def find_or_create(collection, key, name, body, **query):
    found = s.get(f"{base}/{collection}", params=dict(name=name, **query)).json()[collection]
    if found:
        return found[0]["id"]
    return s.post(f"{base}/{collection}", json={key: dict(name=name, **body)}).json()[key]["id"]


def domain(name):
    return "default" if name.lower() == "default" else find_or_create("domains", "domain", name, {})


user_domain, project_domain = domain(e["SERVICE_USER_DOMAIN"]), domain(e["SERVICE_PROJECT_DOMAIN"])
project = find_or_create("projects", "project", e["SERVICE_PROJECT"], {"domain_id": project_domain}, domain_id=project_domain)
user = find_or_create("users", "user", e["SERVICE_USER"], {"domain_id": user_domain, "password": e["SERVICE_PASSWORD"]}, domain_id=user_domain)
s.patch(f"{base}/users/{user}", json={"user": {"password": e["SERVICE_PASSWORD"]}})
role = find_or_create("roles", "role", e["SERVICE_ROLE"], {})
s.put(f"{base}/projects/{project}/users/{user}/roles/{role}")
print(f"user {e['SERVICE_USER']}@{e['SERVICE_USER_DOMAIN']} has role {e['SERVICE_ROLE']} on {e['SERVICE_PROJECT']}@{e['SERVICE_PROJECT_DOMAIN']}")
{{- end -}}

{{/* The scripts of tk.script.* a chart renders: the enabled Jobs that have one and that run.scripts does not replace. */}}
{{- define "tk.sharedScripts" -}}
{{- $out := list -}}
{{- range $job := list "db-init" "ks-service" "ks-endpoints" "ks-user" -}}
{{- if and (index $.Values.manifests (printf "job_%s" ($job | replace "-" "_"))) (not (hasKey $.Values.run.scripts (printf "%s.sh" $job))) -}}
{{- $out = append $out $job -}}
{{- end -}}
{{- end -}}
{{- join " " $out -}}
{{- end -}}
