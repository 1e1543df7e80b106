{{/*
Real containers (run.enabled, set by the release overrides of images built from Debian's
packages): what kwok never needs. tk.entrypointScript is kubernetes-entrypoint's job as a
shell script: wait until each Job of DEPENDENCY_JOBS has succeeded and each Service of
DEPENDENCY_SERVICE has a ready address, asking the API server as the pod's service account.
The test bed has no kube-proxy and no cluster DNS, so it also writes each Service's ready
address into a hosts file on the pod's volume "deps" that tk.withDepsScript appends to the
main container's /etc/hosts (each container has its own): the services find each other by
the Service names OSH's values use. An address is read once, at pod
start: a dependency that moves needs this pod restarted (the test bed's limit).
*/}}
{{- define "tk.entrypointScript" -}}
#!/bin/sh
set -eu
api="https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}"
: > /run/kupenstack-deps/hosts
sa=/var/run/secrets/kubernetes.io/serviceaccount
get() { curl -sf --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat "$sa/token")" "$api$1"; }
for job in $(echo "${DEPENDENCY_JOBS:-}" | tr ',' ' '); do
  until get "/apis/batch/v1/namespaces/$NAMESPACE/jobs/$job" | python3 -c 'import json,sys; sys.exit(0 if (json.load(sys.stdin).get("status") or {}).get("succeeded") else 1)'; do
    echo "waiting for Job $NAMESPACE/$job to succeed"; sleep 3
  done
done
for dep in $(echo "${DEPENDENCY_SERVICE:-}" | tr ',' ' '); do
  ns=${dep%%:*}; svc=${dep#*:}
  until ip=$(get "/api/v1/namespaces/$ns/endpoints/$svc" | python3 -c 'import json,sys; a=[x["ip"] for s in (json.load(sys.stdin).get("subsets") or []) for x in (s.get("addresses") or [])]; print(a[0]) if a else sys.exit(1)'); do
    echo "waiting for a ready address of Service $ns/$svc"; sleep 3
  done
  echo "$ip $svc $svc.$ns $svc.$ns.svc $svc.$ns.svc.cluster.local" >> /run/kupenstack-deps/hosts
  echo "Service $ns/$svc: $ip"
done
{{- end -}}

{{/* The main container's wrapper: the dependencies' addresses the init container found, then the command. */}}
{{- define "tk.withDepsScript" -}}
#!/bin/sh
cat /run/kupenstack-deps/hosts >> /etc/hosts
exec "$@"
{{- end -}}

{{/* conf.<file> as an oslo.config INI file (helm-toolkit.utils.to_oslo_conf): [section] then key = value; lists join with commas. */}}
{{- define "tk.ini" -}}
{{- range $section, $keys := . }}
[{{ $section }}]
{{- range $k, $v := $keys }}
{{- if kindIs "slice" $v }}
{{ $k }} = {{ join "," $v }}
{{- else if not (kindIs "invalid" $v) }}
{{ $k }} = {{ $v }}
{{- end }}
{{- end }}
{{ end }}
{{- end -}}

{{/* The Role every pod's service account needs for tk.entrypointScript: read Jobs and Endpoints of the namespace. */}}
{{- define "tk.entrypointRbac" -}}
{{- if (.Values.run | default dict).enabled }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Chart.Name }}-entrypoint
rules:
- apiGroups: [""]
  resources: [endpoints]
  verbs: [get]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Chart.Name }}-entrypoint
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Chart.Name }}-entrypoint}
subjects:
- {kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}
{{- end }}
{{- end -}}

{{/* The in-cluster URL of endpoints.<type> (helm-toolkit.endpoints.keystone_endpoint_uri_lookup, internal): http://<host>.<namespace>.svc.<suffix>:<port><path>. */}}
{{- define "tk.endpointUrl" -}}
{{- $envAll := index . 0 -}}
{{- $ep := index $envAll.Values.endpoints (index . 1) -}}
{{- printf "http://%s.%s.svc.%s:%v%s" ($ep.hosts.internal | default $ep.hosts.default) ($ep.namespace | default $envAll.Release.Namespace) $envAll.Values.endpoints.cluster_domain_suffix $ep.port.api.internal ($ep.path | default "") -}}
{{- end -}}
