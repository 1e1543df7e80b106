{{/* Labels of every object: application, component, release_group (as helm-toolkit's snippets.kubernetes_metadata_labels). */}}
{{- define "tk.labels" -}}
{{- $envAll := index . 0 -}}
{{- $component := index . 1 -}}
release_group: {{ $envAll.Values.release_group | default $envAll.Release.Name }}
application: {{ $envAll.Values.application | default $envAll.Chart.Name }}
component: {{ $component }}
{{- end -}}

{{/* Test-only pod labels and annotations: test.fail.<name>, test.neverReady.<name>, test.delayMs.<name>. */}}
{{- define "tk.testLabels" -}}
{{- $envAll := index . 0 -}}
{{- $name := index . 1 -}}
{{- $test := $envAll.Values.test | default dict -}}
{{- if index ($test.fail | default dict) $name }}
kupenstack.test/fail: "true"
{{- end }}
{{- if index ($test.neverReady | default dict) $name }}
kupenstack.test/never-ready: "true"
{{- end }}
{{- end -}}

{{- define "tk.testAnnotations" -}}
{{- $envAll := index . 0 -}}
{{- $name := index . 1 -}}
{{- $test := $envAll.Values.test | default dict -}}
{{- with index ($test.delayMs | default dict) $name }}
pod-complete.stage.kwok.x-k8s.io/delay: {{ printf "%vms" . | quote }}
{{- end }}
{{- end -}}
