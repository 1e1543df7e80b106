{{/*
The dependency init container (helm-toolkit.snippets.kubernetes_entrypoint_init_container):
it waits for the Jobs and Services named in dependencies.static.<component>. kwok completes
init containers at once, so tests read the annotation tk.depsAnnotation writes instead.
*/}}
{{- define "tk.entrypoint" -}}
{{- $envAll := index . 0 -}}
{{- $component := index . 1 -}}
{{- $deps := index ($envAll.Values.dependencies.static | default dict) $component | default dict -}}
- name: init
  image: {{ include "tk.image" (list $envAll "dep_check") }}
{{- if ($envAll.Values.run | default dict).enabled }}
  command: [/tmp/bin/entrypoint.sh]
  volumeMounts:
  - {name: bin, mountPath: /tmp/bin, readOnly: true}
  - {name: deps, mountPath: /run/kupenstack-deps}
{{- else }}
  command: [kubernetes-entrypoint]
{{- end }}
  env:
  - name: NAMESPACE
    value: {{ $envAll.Release.Namespace }}
  - name: DEPENDENCY_JOBS
    value: {{ join "," ($deps.jobs | default list) | quote }}
  - name: DEPENDENCY_SERVICE
    value: {{ include "tk.depServices" (list $envAll $deps) | quote }}
{{- end -}}

{{/* "ns:svc,…" of dependencies' services, resolved through endpoints.<service>.hosts.<endpoint>. */}}
{{- define "tk.depServices" -}}
{{- $envAll := index . 0 -}}
{{- $deps := index . 1 -}}
{{- $out := list -}}
{{- range ($deps.services | default list) -}}
{{- $ep := index $envAll.Values.endpoints .service | default dict -}}
{{- $host := index ($ep.hosts | default dict) (.endpoint | default "default") | default (index ($ep.hosts | default dict) "default") | default .service -}}
{{- $out = append $out (printf "%s:%s" ($ep.namespace | default $envAll.Release.Namespace) $host) -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{- define "tk.depsAnnotation" -}}
{{- $envAll := index . 0 -}}
{{- $component := index . 1 -}}
kupenstack.test/deps: {{ index ($envAll.Values.dependencies.static | default dict) $component | default dict | toJson | quote }}
{{- end -}}

