{{/* Names, labels and shared fragments of the opencrane-fleet chart. */}}

{{- define "opencrane-fleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object-name prefix: the release name, plus "-fleet" unless it already says so. */}}
{{- define "opencrane-fleet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "fleet" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-fleet" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Kubernetes recommended labels. */}}
{{- define "opencrane-fleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "opencrane-fleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: opencrane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of the fleet-manager pods. */}}
{{- define "opencrane-fleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "opencrane-fleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: fleet-manager
{{- end -}}

{{- define "opencrane-fleet.manager" -}}
{{- printf "%s-manager" (include "opencrane-fleet.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The image: by digest when one is given (immutable), else by tag (default: appVersion). */}}
{{- define "opencrane-fleet.image" -}}
{{- $img := .Values.fleetManager.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "opencrane-fleet.host" -}}
{{- default (printf "platform.%s" .Values.ingress.domain) .Values.ingress.controlPlaneHost -}}
{{- end -}}

{{/* Name of the CloudNativePG cluster holding the fleet registry. */}}
{{- define "opencrane-fleet.dbCluster" -}}
{{- printf "%s-db" (include "opencrane-fleet.fullname" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{/* Secret and key holding DATABASE_URL. */}}
{{- define "opencrane-fleet.dbSecret" -}}
{{- $db := .Values.fleetManager.database -}}
{{- if $db.cnpg.enabled -}}{{ include "opencrane-fleet.dbCluster" . }}-app
{{- else if $db.existingSecret -}}{{ $db.existingSecret }}
{{- else -}}{{ include "opencrane-fleet.fullname" . }}-database
{{- end -}}
{{- end -}}
{{- define "opencrane-fleet.dbSecretKey" -}}
{{- if .Values.fleetManager.database.cnpg.enabled -}}uri{{- else -}}{{ .Values.fleetManager.database.secretKey }}{{- end -}}
{{- end -}}

{{- define "opencrane-fleet.apiTokenSecret" -}}
{{- default (printf "%s-api-token" (include "opencrane-fleet.fullname" .)) .Values.fleetManager.apiTokenExistingSecret -}}
{{- end -}}

{{/* Restricted Pod Security: pod level, with fleetManager.podSecurityContext merged over it. */}}
{{- define "opencrane-fleet.podSecurityContext" -}}
{{- $defaults := fromYaml (include "opencrane-fleet.restrictedPod" .) -}}
{{- toYaml (merge (deepCopy .Values.fleetManager.podSecurityContext) $defaults) -}}
{{- end -}}

{{/* Restricted Pod Security: container level, with fleetManager.securityContext merged over it. */}}
{{- define "opencrane-fleet.containerSecurityContext" -}}
{{- $defaults := fromYaml (include "opencrane-fleet.restrictedContainer" .) -}}
{{- toYaml (merge (deepCopy .Values.fleetManager.securityContext) $defaults) -}}
{{- end -}}

{{- define "opencrane-fleet.restrictedPod" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "opencrane-fleet.restrictedContainer" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Environment shared by the manager and the migration Job: the database. */}}
{{- define "opencrane-fleet.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "opencrane-fleet.dbSecret" . }}
      key: {{ include "opencrane-fleet.dbSecretKey" . }}
{{- end -}}

{{/* Render-time checks: a value combination that cannot work fails the install here. */}}
{{- define "opencrane-fleet.validate" -}}
{{- $fm := .Values.fleetManager -}}
{{- if and (not $fm.database.cnpg.enabled) (not $fm.database.url) (not $fm.database.existingSecret) -}}
{{- fail "fleetManager.database: enable cnpg, or set url or existingSecret" -}}
{{- end -}}
{{- if and $fm.oidc.issuerUrl (not $fm.oidc.clientId) -}}
{{- fail "fleetManager.oidc.clientId is required when fleetManager.oidc.issuerUrl is set" -}}
{{- end -}}
{{- if and $fm.oidc.issuerUrl (not $fm.oidc.platformOperatorSeedEmail) (not $fm.oidc.platformOperatorGroups) -}}
{{- fail "fleetManager.oidc: set platformOperatorSeedEmail or platformOperatorGroups, or nobody can administer the platform" -}}
{{- end -}}
{{- if and $fm.zitadel.mgmtApiUrl (not $fm.zitadel.existingSecret) -}}
{{- fail "fleetManager.zitadel.existingSecret (the service-account key) is required when fleetManager.zitadel.mgmtApiUrl is set" -}}
{{- end -}}
{{- if and .Values.gitops (not $fm.apiTokenExistingSecret) -}}
{{- fail "fleetManager.apiTokenExistingSecret is required when gitops is true (a generated token would change on every sync)" -}}
{{- end -}}
{{- if and $fm.clusterTenantApi.enabled (not .Values.admissionPolicy.enabled) -}}
{{- fail "admissionPolicy.enabled: the fleet's ClusterRole creates RoleBindings and binds the silo-installer role; without the policy that confines it to silo namespaces it could bind itself anywhere (disable clusterTenantApi instead)" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- if and (eq .Values.certManager.createIssuer "acme") (not .Values.certManager.acme.email) -}}
{{- fail "certManager.acme.email is required when certManager.createIssuer is acme" -}}
{{- end -}}
{{- end -}}

{{/* Rolls the pods when their configuration changes: a digest of every value they read. */}}
{{- define "opencrane-fleet.configChecksum" -}}
{{- dict "fleetManager" .Values.fleetManager "ingress" .Values.ingress "certManager" .Values.certManager "billing" .Values.billing "metrics" .Values.metrics | toJson | sha256sum -}}
{{- end -}}
