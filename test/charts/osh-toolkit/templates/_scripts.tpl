{{/*
Real containers: the scripts of the Jobs every service chart shares (helm-toolkit's
scripts/_db-init.py.tpl, _ks-service.sh.tpl, _ks-endpoints.sh.tpl and _ks-user.sh.tpl do
these jobs in OSH), over the mysql client, the openstack CLI and keystoneauth of the image
the chart names for them (the keystone image). Every credential comes from the environment
(the Secret <chart>-run-env), never from a command line. Each script is idempotent: a Job
run again (a new release_uuid, a retried pod) finds its work done and says so.
*/}}
{{- define "tk.script.db-init" -}}
#!/bin/sh
# The database(s) and the service's user (root's password from the environment, never on a command line).
set -eu
export MYSQL_PWD="$DB_ROOT_PASSWORD"
for db in $DB_NAME ${DB_EXTRA_NAMES:-}; do
mysql -h "$DB_HOST" -u root <<SQL
CREATE DATABASE IF NOT EXISTS \`$db\`;
CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON \`$db\`.* TO '$DB_USER'@'%';
SQL
echo "database $db and user $DB_USER ready on $DB_HOST"
done
{{- end -}}

{{- define "tk.script.ks-service" -}}
#!/bin/sh
# The catalog's service entry, once: type and name from the chart's own endpoint.
set -eu
if openstack service list -f value -c Name -c Type | grep -qx "$SERVICE_NAME $SERVICE_TYPE"; then
  echo "service $SERVICE_NAME ($SERVICE_TYPE) is in the catalog"
else
  openstack service create --name "$SERVICE_NAME" --description "KupenStack: $SERVICE_NAME" "$SERVICE_TYPE" -f value -c id
  echo "service $SERVICE_NAME ($SERVICE_TYPE) created"
fi
{{- end -}}

{{- define "tk.script.ks-endpoints" -}}
#!/bin/sh
# One endpoint per interface in the region: created when missing, replaced when its URL differs.
set -eu
for iface in admin internal public; do
  have=$(openstack endpoint list --service "$SERVICE_TYPE" --interface "$iface" --region "$REGION" -f value -c ID -c URL)
  if [ "$(echo "$have" | cut -d' ' -f2)" = "$SERVICE_URL" ] && [ "$(echo "$have" | grep -c .)" = 1 ]; then
    echo "$iface endpoint of $SERVICE_TYPE is $SERVICE_URL"
    continue
  fi
  for id in $(echo "$have" | cut -d' ' -f1); do openstack endpoint delete "$id"; done
  openstack endpoint create --region "$REGION" "$SERVICE_TYPE" "$iface" "$SERVICE_URL" -f value -c id
  echo "$iface endpoint of $SERVICE_TYPE set to $SERVICE_URL"
done
{{- end -}}

{{- define "tk.script.ks-user" -}}
#!/usr/bin/python3
# The service's own user: its domain and project, its password (set again: the Secret is the
# truth), its role there. Python over keystoneauth (the keystone image's) rather than the CLI:
# the openstack CLI takes a new password only on its command line.
import os
from keystoneauth1 import session
from keystoneauth1.identity import v3

e = os.environ
base = e["OS_AUTH_URL"].rstrip("/")
s = session.Session(auth=v3.Password(auth_url=base, username=e["OS_USERNAME"], password=e["OS_PASSWORD"], project_name=e["OS_PROJECT_NAME"],
                                     user_domain_name=e["OS_USER_DOMAIN_NAME"], project_domain_name=e["OS_PROJECT_DOMAIN_NAME"]))


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
