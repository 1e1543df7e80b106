{{/* The image of one container role: images.tags.<key>, with the registry replaced when images.registry is set. */}}
{{- define "tk.image" -}}
{{- $envAll := index . 0 -}}
{{- $key := index . 1 -}}
{{- $tag := index $envAll.Values.images.tags $key | required (printf "images.tags.%s is not set" $key) -}}
{{- with $envAll.Values.images.registry -}}
{{- $parts := splitn "/" 2 $tag -}}
{{- printf "%s/%s" . $parts._1 -}}
{{- else -}}
{{- $tag -}}
{{- end -}}
{{- end -}}

{{/* sha256 of a rendered template of this chart (helm-toolkit.utils.hash). */}}
{{- define "tk.hash" -}}
{{- $name := index . 0 -}}
{{- $context := index . 1 -}}
{{- $last := base $context.Template.Name -}}
{{- $wtf := $context.Template.Name | replace $last $name -}}
{{- include $wtf $context | sha256sum -}}
{{- end -}}
