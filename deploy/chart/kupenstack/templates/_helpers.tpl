{{/* Name of cluster-scoped objects and of the Deployment: unique per release, so two releases (or the kustomize manifests) never fight over a ClusterRole. */}}
{{- define "kupenstack.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kupenstack.labels" -}}
app.kubernetes.io/part-of: kupenstack
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kupenstack.selector" -}}
app.kubernetes.io/name: kupenstack-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

