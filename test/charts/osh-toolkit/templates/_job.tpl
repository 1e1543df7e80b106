{{/*
One OpenStack-Helm job (helm-toolkit.manifests.job_db_sync and friends): a Job named
<chart>-<job>, a Helm post-install/post-upgrade hook with a weight when helm3_hook is true,
release_uuid on the pod (a new value forces a new, immutable Job), backoffLimit from
jobs.<job>.backoffLimit (default 1000; 0 under test.fail), restartPolicy OnFailure (Never for
real containers).
Arguments: dict envAll, job (name suffix), imageKey, weight, hook (bool), command.
*/}}
{{- define "tk.job" -}}
{{- $envAll := .envAll -}}
{{- $job := .job -}}
{{- $name := printf "%s-%s" $envAll.Chart.Name $job -}}
{{- $conf := index ($envAll.Values.jobs | default dict) ($job | replace "-" "_") | default dict -}}
{{- $fail := index (($envAll.Values.test | default dict).fail | default dict) $job -}}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ $name }}
  labels:
{{ include "tk.labels" (list $envAll $job) | indent 4 }}
  annotations:
{{- if and .hook $envAll.Values.helm3_hook }}
    helm.sh/hook: post-install,post-upgrade
    helm.sh/hook-weight: {{ .weight | quote }}
{{- end }}
    openstackhelm.openstack.org/job: {{ $job | quote }}
spec:
  backoffLimit: {{ if $fail }}0{{ else }}{{ $conf.backoffLimit | default 1000 }}{{ end }}
{{- with $conf.activeDeadlineSeconds }}
  activeDeadlineSeconds: {{ . }}
{{- end }}
  template:
    metadata:
      labels:
{{ include "tk.labels" (list $envAll $job) | indent 8 }}
{{- include "tk.testLabels" (list $envAll $job) | indent 8 }}
      annotations:
        openstackhelm.openstack.org/release_uuid: {{ $envAll.Values.release_uuid | default "" | quote }}
{{- if ($envAll.Values.run | default dict).enabled }}
        {{- /* What the script reads: a Job whose script, configuration or credentials changed is a new Job (a failed one runs again once fixed). */}}
        configmap-bin-hash: {{ tuple "configmap-bin.yaml" $envAll | include "tk.hash" }}
        secret-etc-hash: {{ tuple "secret-etc.yaml" $envAll | include "tk.hash" }}
        secret-run-env-hash: {{ tuple "secret-run-env.yaml" $envAll | include "tk.hash" }}
{{- end }}
{{ include "tk.depsAnnotation" (list $envAll ($job | replace "-" "_")) | indent 8 }}
{{- include "tk.testAnnotations" (list $envAll $job) | indent 8 }}
    spec:
      {{- /* Real containers: each failed attempt is a pod of its own that stays (its exit code and log for status); OnFailure restarts it in place and deletes it at the backoff limit. */}}
      restartPolicy: {{ if ($envAll.Values.run | default dict).enabled }}Never{{ else }}OnFailure{{ end }}
      nodeSelector:
        {{ $envAll.Values.labels.job.node_selector_key }}: {{ $envAll.Values.labels.job.node_selector_value | quote }}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
{{- with (($envAll.Values.pod | default dict).tolerations) }}
{{ toYaml . | indent 6 }}
{{- end }}
      initContainers:
{{ include "tk.entrypoint" (list $envAll ($job | replace "-" "_")) | indent 8 }}
      containers:
      - name: {{ $job }}
        image: {{ include "tk.image" (list $envAll .imageKey) }}
{{- if ($envAll.Values.run | default dict).enabled }}
        {{- /* Real containers: the job's own script (run.scripts.<job>.sh), its secrets as environment, the service's configuration file. */}}
        command: [/tmp/bin/with-deps.sh, /tmp/bin/{{ $job }}.sh]
        envFrom:
        - secretRef: {name: {{ $envAll.Chart.Name }}-run-env}
        volumeMounts:
        - {name: bin, mountPath: /tmp/bin, readOnly: true}
        - {name: etc, mountPath: /etc/{{ $envAll.Chart.Name }}/{{ $envAll.Values.run.confFile }}, subPath: {{ $envAll.Values.run.confFile }}, readOnly: true}
        - {name: deps, mountPath: /run/kupenstack-deps, readOnly: true}
{{- else }}
        command: {{ toJson .command }}
        volumeMounts:
        - {name: bin, mountPath: /tmp/bin, readOnly: true}
{{- end }}
      volumes:
      - name: bin
        configMap: {name: {{ $envAll.Chart.Name }}-bin, defaultMode: 0555}
{{- if ($envAll.Values.run | default dict).enabled }}
      - name: etc
        secret: {secretName: {{ $envAll.Chart.Name }}-etc}
      - name: deps
        emptyDir: {}
{{- end }}
{{- end -}}
