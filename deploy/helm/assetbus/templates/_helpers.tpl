{{/* The release's full name, at most 63 characters (a DNS label). */}}
{{- define "assetbus.fullname" -}}
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

{{- define "assetbus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; call with (dict "root" $ "component" "persister"). */}}
{{- define "assetbus.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
{{ include "assetbus.selectorLabels" . }}
{{- end -}}

{{- define "assetbus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "assetbus.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{- define "assetbus.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "assetbus.secretName" -}}
{{- .Values.secret.existingSecret | default (include "assetbus.fullname" .) -}}
{{- end -}}

{{- define "assetbus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "assetbus.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
The secret values a component reads, each from the Secret key of the same name (a missing key leaves the
variable unset). Call with (dict "root" $ "component" "persister").
*/}}
{{- define "assetbus.secretKeys" -}}
{{- $keys := list "DATABASE_URL" "KAFKA_SASL_PASSWORD" "KAFKA_SASL_OAUTH_CLIENT_SECRET" "KAFKA_SSL_KEY_PASSWORD" -}}
{{- if has .component (list "persister" "api") -}}
{{- $keys = append $keys "ASSETBUS_TOKEN_SECRET" -}}
{{- end -}}
{{- if or (has .component (list "bridge" "forwarder")) (and (eq .component "api") .root.Values.airflow.url) -}}
{{- $keys = concat $keys (list "ASSETBUS_AIRFLOW_PASSWORD" "ASSETBUS_AIRFLOW_TOKEN") -}}
{{- end -}}
{{- toJson $keys -}}
{{- end -}}

{{/* The environment of a component's container. Call with (dict "root" $ "component" "persister"). */}}
{{- define "assetbus.env" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
- name: KAFKA_BOOTSTRAP_SERVERS
  value: {{ $v.kafka.bootstrapServers | quote }}
{{- with $v.kafka.securityProtocol }}
- name: KAFKA_SECURITY_PROTOCOL
  value: {{ . | quote }}
{{- end }}
{{- with $v.kafka.saslMechanism }}
- name: KAFKA_SASL_MECHANISM
  value: {{ . | quote }}
{{- end }}
{{- with $v.kafka.saslUsername }}
- name: KAFKA_SASL_USERNAME
  value: {{ . | quote }}
{{- end }}
{{- if $v.kafka.tls.secretName }}
- name: KAFKA_SSL_CAFILE
  value: /etc/assetbus/kafka-tls/ca.crt
{{- if $v.kafka.tls.clientCertificate }}
- name: KAFKA_SSL_CERTFILE
  value: /etc/assetbus/kafka-tls/tls.crt
- name: KAFKA_SSL_KEYFILE
  value: /etc/assetbus/kafka-tls/tls.key
{{- end }}
{{- end }}
- name: KAFKA_CLIENT_ID
  value: {{ include "assetbus.fullname" $root | quote }}
- name: ASSETBUS_TOPIC_PREFIX
  value: {{ $v.topicPrefix | quote }}
- name: ASSETBUS_CREATE_TOPICS
  value: {{ $v.createTopics | quote }}
- name: ASSETBUS_LOG_FORMAT
  value: {{ $v.logFormat | quote }}
- name: ASSETBUS_HOME
  value: /tmp/assetbus
{{- if and $v.tokens.jwksSecret (has .component (list "persister" "api")) }}
- name: ASSETBUS_TOKEN_JWKS
  value: /etc/assetbus/jwks/jwks.json
{{- end }}
{{- if or (has .component (list "bridge" "forwarder")) (and (eq .component "api") $v.airflow.url) }}
- name: ASSETBUS_AIRFLOW_URL
  value: {{ $v.airflow.url | quote }}
- name: ASSETBUS_AIRFLOW_USERNAME
  value: {{ $v.airflow.username | quote }}
{{- if and (eq .component "api") $v.tokens.signingKeySecret }}
- name: ASSETBUS_TOKEN_SIGNING_KEY
  value: /etc/assetbus/signing-key/signing-key.pem
{{- end }}
{{- end }}
{{- range (include "assetbus.secretKeys" . | fromJsonArray) }}
- name: {{ . }}
  valueFrom:
    secretKeyRef:
      name: {{ include "assetbus.secretName" $root }}
      key: {{ . }}
      optional: {{ ne . "DATABASE_URL" }}
{{- end }}
{{- with $v.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes and their mounts: /tmp (the root filesystem is read-only) and the Secrets mounted as files. */}}
{{- define "assetbus.volumes" -}}
{{- $v := .root.Values -}}
- name: tmp
  emptyDir: {}
{{- if $v.kafka.tls.secretName }}
- name: kafka-tls
  secret:
    secretName: {{ $v.kafka.tls.secretName }}
{{- end }}
{{- if and $v.tokens.jwksSecret (has .component (list "persister" "api")) }}
- name: jwks
  secret:
    secretName: {{ $v.tokens.jwksSecret }}
    items: [{key: jwks.json, path: jwks.json}]
{{- end }}
{{- if and (eq .component "api") $v.airflow.url $v.tokens.signingKeySecret }}
- name: signing-key
  secret:
    secretName: {{ $v.tokens.signingKeySecret }}
    defaultMode: 0400
    items: [{key: signing-key.pem, path: signing-key.pem}]
{{- end }}
{{- end -}}

{{- define "assetbus.volumeMounts" -}}
{{- $v := .root.Values -}}
- name: tmp
  mountPath: /tmp
{{- if $v.kafka.tls.secretName }}
- name: kafka-tls
  mountPath: /etc/assetbus/kafka-tls
  readOnly: true
{{- end }}
{{- if and $v.tokens.jwksSecret (has .component (list "persister" "api")) }}
- name: jwks
  mountPath: /etc/assetbus/jwks
  readOnly: true
{{- end }}
{{- if and (eq .component "api") $v.airflow.url $v.tokens.signingKeySecret }}
- name: signing-key
  mountPath: /etc/assetbus/signing-key
  readOnly: true
{{- end }}
{{- end -}}

{{/* The pod-level fields every workload shares. */}}
{{- define "assetbus.podSpec" -}}
{{- $v := .root.Values -}}
{{- $account := include "assetbus.serviceAccountName" .root -}}
{{- if and (eq .component "migrate") $v.serviceAccount.create -}}
{{- /* before an install the chart's ServiceAccount does not exist yet: the hook runs as the namespace's default */ -}}
{{- $account = "default" -}}
{{- end -}}
serviceAccountName: {{ $account }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml $v.podSecurityContext | nindent 2 }}
{{- with $v.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "assetbus.volumes" . | nindent 2 }}
{{- end -}}

{{/* Liveness, readiness and start-up probes on a named container port. Call with (dict "root" $ "port" "metrics"). */}}
{{- define "assetbus.probes" -}}
{{- $p := .root.Values.probes -}}
startupProbe:
  httpGet: {path: /healthz, port: {{ .port }}}
  {{- toYaml $p.startup | nindent 2 }}
livenessProbe:
  httpGet: {path: /healthz, port: {{ .port }}}
  {{- toYaml $p.liveness | nindent 2 }}
readinessProbe:
  httpGet: {path: /readyz, port: {{ .port }}}
  {{- toYaml $p.readiness | nindent 2 }}
{{- end -}}
