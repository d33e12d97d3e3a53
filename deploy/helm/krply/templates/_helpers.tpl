{{- define "krply.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "krply.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "krply.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "krply.labels" -}}
app.kubernetes.io/name: {{ include "krply.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "krply.selectorLabels" -}}
app.kubernetes.io/name: {{ include "krply.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: recorder
{{- end -}}

{{- define "krply.serviceAccountName" -}}
{{- default (include "krply.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "krply.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "krply.scheme" -}}
{{- if .Values.api.tlsSecret -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/* The pod's labels: the standard ones and the selector's. */}}
{{- define "krply.podLabels" -}}
{{ include "krply.labels" . }}
app.kubernetes.io/component: recorder
app.kubernetes.io/part-of: krply
{{- end -}}

{{/* Whether to leave fixed user and group IDs out of the security
contexts: openshift true, or auto on a cluster serving OpenShift's
security.openshift.io API, whose SCCs assign them. */}}
{{- define "krply.openshift" -}}
{{- if or (eq (toString .Values.openshift) "true") (and (eq (toString .Values.openshift) "auto") (.Capabilities.APIVersions.Has "security.openshift.io/v1")) -}}
true
{{- end -}}
{{- end -}}

{{/* A security context from values (the dict in .context), without fixed
user and group IDs on OpenShift. */}}
{{- define "krply.securityContext" -}}
{{- $sc := deepCopy .context -}}
{{- if include "krply.openshift" .root -}}
{{- $_ := unset $sc "runAsUser" -}}
{{- $_ := unset $sc "runAsGroup" -}}
{{- $_ := unset $sc "fsGroup" -}}
{{- end -}}
{{- toYaml $sc -}}
{{- end -}}
