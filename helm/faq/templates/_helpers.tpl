{{/* Names and labels. */}}
{{- define "faq.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "faq.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "faq.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels; call with (dict "root" $ "component" "api"). */}}
{{- define "faq.selectorLabels" -}}
app.kubernetes.io/name: {{ include "faq.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "faq.labels" -}}
helm.sh/chart: {{ include "faq.chart" .root }}
{{ include "faq.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: {{ include "faq.name" .root }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{- define "faq.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{- define "faq.configName" -}}
{{ include "faq.fullname" . }}-config
{{- end }}

{{- define "faq.secretName" -}}
{{- if .Values.secrets.existingSecret -}}
{{ .Values.secrets.existingSecret }}
{{- else -}}
{{ include "faq.fullname" . }}-secrets
{{- end -}}
{{- end }}

{{/* The non-secret settings (ConfigMap data), shared by the release ConfigMap and the hook copy. */}}
{{- define "faq.configData" -}}
FAQ_ENV: {{ .Values.config.env | quote }}
FAQ_LOG_LEVEL: {{ .Values.config.logLevel | quote }}
FAQ_PROGRESS_LOG_SECONDS: {{ .Values.config.progressLogSeconds | toString | quote }}
FAQ_PUBLISH_SWEEP_SECONDS: {{ .Values.config.publishSweepSeconds | toString | quote }}
FAQ_OUTBOX_SWEEP_SECONDS: {{ .Values.config.outboxSweepSeconds | toString | quote }}
FAQ_WEBHOOK_TIMEOUT_SECONDS: {{ .Values.config.webhookTimeoutSeconds | toString | quote }}
FAQ_WEBHOOK_RETRY_BASE_SECONDS: {{ .Values.config.webhookRetryBaseSeconds | toString | quote }}
FAQ_WEBHOOK_ALLOW_PRIVATE_NETWORKS: {{ .Values.config.webhookAllowPrivateNetworks | toString | quote }}
FAQ_REQUEST_STATEMENT_TIMEOUT_MS: {{ .Values.config.requestStatementTimeoutMs | int64 | toString | quote }}
FAQ_JOB_STATEMENT_TIMEOUT_MS: {{ .Values.config.jobStatementTimeoutMs | int64 | toString | quote }}
FAQ_DB_POOL_SIZE: {{ .Values.config.dbPoolSize | toString | quote }}
FAQ_DB_MAX_OVERFLOW: {{ .Values.config.dbMaxOverflow | toString | quote }}
FAQ_DB_POOL_RECYCLE_SECONDS: {{ .Values.config.dbPoolRecycleSeconds | toString | quote }}
FAQ_MAX_BODY_BYTES: {{ .Values.config.maxBodyBytes | int64 | toString | quote }}
FAQ_RESPONSE_CACHE_MB: {{ .Values.config.responseCacheMb | toString | quote }}
FAQ_RESPONSE_CACHE_SECONDS: {{ .Values.config.responseCacheSeconds | toString | quote }}
FAQ_SCHEDULER_LOCK_TTL_SECONDS: {{ .Values.config.schedulerLockTtlSeconds | toString | quote }}
FAQ_WEBHOOK_REDRIVE_AFTER_SECONDS: {{ .Values.config.webhookRedriveAfterSeconds | toString | quote }}
FAQ_WEBHOOK_MAX_IN_FLIGHT: {{ .Values.config.webhookMaxInFlight | toString | quote }}
FAQ_DELIVERY_RETENTION_DAYS: {{ .Values.config.deliveryRetentionDays | toString | quote }}
FAQ_AUDIT_RETENTION_DAYS: {{ .Values.config.auditRetentionDays | toString | quote }}
FAQ_RATE_LIMIT_WINDOW_SECONDS: {{ .Values.config.rateLimitWindowSeconds | toString | quote }}
FAQ_ORG_MAX_INFLIGHT: {{ .Values.config.orgMaxInflight | toString | quote }}
FAQ_AUTH_FAILURES_PER_MINUTE: {{ .Values.config.authFailuresPerMinute | toString | quote }}
FAQ_PUBLIC_KEY_PER_ADDRESS_PER_MINUTE: {{ .Values.config.publicKeyPerAddressPerMinute | toString | quote }}
FAQ_TRUSTED_PROXIES: {{ .Values.config.trustedProxies | quote }}
FAQ_TRUST_FORWARDED_FOR: {{ .Values.config.trustForwardedFor | toString | quote }}
FAQ_HC_PAGES_PER_ADDRESS_PER_MINUTE: {{ .Values.config.hcPagesPerAddressPerMinute | toString | quote }}
FAQ_HC_SEARCHES_PER_ADDRESS_PER_MINUTE: {{ .Values.config.hcSearchesPerAddressPerMinute | toString | quote }}
FAQ_HC_PAGES_PER_ORG_PER_MINUTE: {{ .Values.config.hcPagesPerOrgPerMinute | toString | quote }}
FAQ_HC_SEARCHES_PER_ORG_PER_MINUTE: {{ .Values.config.hcSearchesPerOrgPerMinute | toString | quote }}
FAQ_HC_BURST_SECONDS: {{ .Values.config.hcBurstSeconds | toString | quote }}
FAQ_KEEP_ALIVE_SECONDS: {{ .Values.config.keepAliveSeconds | toString | quote }}
FAQ_CONTENT_ANALYTICS: {{ .Values.config.contentAnalytics | toString | quote }}
FAQ_SEMANTIC_SEARCH: {{ .Values.config.semanticSearch | toString | quote }}
FAQ_EMBEDDINGS_TIMEOUT_SECONDS: {{ .Values.config.embeddings.timeoutSeconds | toString | quote }}
FAQ_EMBEDDINGS_QUERY_CACHE_MB: {{ .Values.config.embeddings.queryCacheMb | toString | quote }}
FAQ_EMBEDDINGS_LANGUAGES: {{ .Values.config.embeddings.languages | quote }}
{{- with .Values.config.embeddings.url }}
FAQ_EMBEDDINGS_URL: {{ . | quote }}
FAQ_EMBEDDINGS_MODEL: {{ required "config.embeddings.model is required with config.embeddings.url" $.Values.config.embeddings.model | quote }}
FAQ_EMBEDDINGS_DIMENSIONS: {{ required "config.embeddings.dimensions is required with config.embeddings.url" $.Values.config.embeddings.dimensions | toString | quote }}
{{- end }}
{{- with .Values.config.rateLimits }}
FAQ_RATE_LIMITS: {{ . | quote }}
{{- end }}
{{- with .Values.config.billingReturnUrl }}
FAQ_BILLING_RETURN_URL: {{ . | quote }}
{{- end }}
{{- if .Values.config.webhookCaBundle.configMapName }}
FAQ_WEBHOOK_CA_BUNDLE: {{ printf "/etc/faq/ca/%s" .Values.config.webhookCaBundle.key | quote }}
{{- end }}
{{- range $name, $value := .Values.config.extraEnv }}
{{ $name }}: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* The chart-managed Secret data, shared by the release Secret and the hook copy. */}}
{{- define "faq.secretData" -}}
DATABASE_URL: {{ .Values.secrets.databaseUrl | b64enc | quote }}
REDIS_URL: {{ .Values.secrets.redisUrl | b64enc | quote }}
FAQ_SECRET_KEY: {{ .Values.secrets.secretKey | b64enc | quote }}
{{- if .Values.secrets.stripeApiKey }}
STRIPE_API_KEY: {{ .Values.secrets.stripeApiKey | b64enc | quote }}
{{- end }}
{{- if .Values.secrets.stripeWebhookSecret }}
STRIPE_WEBHOOK_SECRET: {{ .Values.secrets.stripeWebhookSecret | b64enc | quote }}
{{- end }}
{{- if .Values.secrets.embeddingsApiKey }}
FAQ_EMBEDDINGS_API_KEY: {{ .Values.secrets.embeddingsApiKey | b64enc | quote }}
{{- end }}
{{- end }}

{{/*
Environment of every container: settings from a ConfigMap, secrets by key from a Secret.
Call with (dict "root" $ "configName" ... "secretName" ...).
*/}}
{{- define "faq.envFrom" -}}
- configMapRef:
    name: {{ .configName }}
{{- end }}

{{- define "faq.secretEnv" -}}
{{- $keys := .root.Values.secrets.existingSecretKeys -}}
{{- $external := ne .root.Values.secrets.existingSecret "" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.databaseUrl "DATABASE_URL" $external }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.redisUrl "REDIS_URL" $external }}
- name: FAQ_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.secretKey "FAQ_SECRET_KEY" $external }}
- name: STRIPE_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.stripeApiKey "STRIPE_API_KEY" $external }}
      optional: true
- name: STRIPE_WEBHOOK_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.stripeWebhookSecret "STRIPE_WEBHOOK_SECRET" $external }}
      optional: true
- name: FAQ_EMBEDDINGS_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ ternary $keys.embeddingsApiKey "FAQ_EMBEDDINGS_API_KEY" $external }}
      optional: true
{{- end }}

{{/* Pod-level fields every workload shares. */}}
{{- define "faq.podCommon" -}}
automountServiceAccountToken: false
{{- if .Values.serviceAccountName }}
serviceAccountName: {{ .Values.serviceAccountName }}
{{- end }}
enableServiceLinks: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "faq.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- if .Values.config.webhookCaBundle.configMapName }}
- name: webhook-ca
  configMap:
    name: {{ .Values.config.webhookCaBundle.configMapName }}
    items:
      - key: {{ .Values.config.webhookCaBundle.key }}
        path: {{ .Values.config.webhookCaBundle.key }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "faq.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.config.webhookCaBundle.configMapName }}
- name: webhook-ca
  mountPath: /etc/faq/ca
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "faq.podAnnotations" -}}
checksum/config: {{ include "faq.configData" . | sha256sum }}
{{- if not .Values.secrets.existingSecret }}
checksum/secrets: {{ include "faq.secretData" . | sha256sum }}
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}
