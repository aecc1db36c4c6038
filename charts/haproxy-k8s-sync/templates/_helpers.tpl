{{- define "hks.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hks.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "hks.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hks.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hks.labels" -}}
{{ include "hks.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "hks.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "hks.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "hks.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret holding the Data Plane API credentials, if any. */}}
{{- define "hks.secretName" -}}
{{- if .Values.env.existingSecret -}}
{{- .Values.env.existingSecret -}}
{{- else if or .Values.env.haproxy.dataplanePassword .Values.env.haproxy.dataplaneToken -}}
{{- include "hks.fullname" . -}}
{{- end -}}
{{- end -}}

{{/* Flags every mode shares. */}}
{{- define "hks.commonArgs" -}}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
{{- if .Values.metrics.enabled }}
- --metrics-address=:{{ .Values.metrics.port }}
{{- else }}
- --metrics-address=
{{- end }}
{{- if and .Values.leaderElection.enabled (has (include "hks.mode" .) (list "services" "gateway")) }}
- --leader-elect
- --leader-election-namespace=$(POD_NAMESPACE)
- --leader-election-name={{ include "hks.fullname" . }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "hks.commonEnv" -}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
# Go's soft memory limit follows the container's limit.
- name: GOMEMLIMIT
  valueFrom: {resourceFieldRef: {resource: limits.memory}}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "hks.probes" -}}
{{- if .Values.metrics.enabled }}
readinessProbe:
  httpGet: {path: /readyz, port: metrics}
  periodSeconds: 5
livenessProbe:
  httpGet: {path: /healthz, port: metrics}
  periodSeconds: 10
  failureThreshold: 6
{{- end }}
{{- end -}}

{{- define "hks.podSpecCommon" -}}
serviceAccountName: {{ include "hks.serviceAccountName" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext: {{ toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{ toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{ toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The mode: as set, else dataplane when a Data Plane API URL is given (the
older controller's `--set env.haproxy.dataplaneURL=...` keeps working), else
services. */}}
{{- define "hks.mode" -}}
{{- if .Values.mode -}}
{{- .Values.mode -}}
{{- else if .Values.env.haproxy.dataplaneURL -}}
dataplane
{{- else -}}
services
{{- end -}}
{{- end -}}
