{{- define "llmserve.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "llmserve.eppName" -}}
{{ .Release.Name }}-epp
{{- end }}
