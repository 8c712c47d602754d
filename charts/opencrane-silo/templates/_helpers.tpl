{{/* Names, labels and shared fragments of the opencrane-silo chart. */}}

{{- define "opencrane-silo.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object-name prefix: the release name, plus "-silo" unless it already says so. */}}
{{- define "opencrane-silo.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains "silo" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-silo" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "opencrane-silo.ct" -}}
{{- required "clusterTenant.name is required (the ClusterTenant this silo serves, e.g. acme)" .Values.clusterTenant.name -}}
{{- end -}}

{{- define "opencrane-silo.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "opencrane-silo.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: opencrane
app.kubernetes.io/managed-by: {{ .Release.Service }}
opencrane.io/cluster-tenant: {{ include "opencrane-silo.ct" . }}
{{- end -}}

{{- define "opencrane-silo.selectorLabels" -}}
app.kubernetes.io/name: {{ include "opencrane-silo.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "opencrane-silo.manager" -}}
{{- printf "%s-manager" (include "opencrane-silo.fullname" .) -}}
{{- end -}}

{{/* The manager's image: by digest when one is given (immutable), else by tag (default: appVersion). */}}
{{- define "opencrane-silo.image" -}}
{{- $img := .Values.clustertenantManager.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{- define "opencrane-silo.host" -}}
{{- default (printf "%s.%s" (include "opencrane-silo.ct" .) .Values.ingress.domain) .Values.ingress.controlPlaneHost -}}
{{- end -}}

{{- define "opencrane-silo.tlsSecret" -}}
{{- default (printf "%s-tls" (include "opencrane-silo.fullname" .)) .Values.ingress.tls.secretName -}}
{{- end -}}

{{/* fleet-managed or standalone. */}}
{{- define "opencrane-silo.mode" -}}
{{- if .Values.deploymentMode -}}{{ .Values.deploymentMode }}
{{- else if .Values.clustertenantManager.fleetInternalUrl -}}fleet-managed
{{- else -}}standalone
{{- end -}}
{{- end -}}

{{- define "opencrane-silo.dbCluster" -}}
{{- printf "%s-db" (include "opencrane-silo.fullname" .) -}}
{{- end -}}

{{- define "opencrane-silo.dbSecret" -}}
{{- $db := .Values.clustertenantManager.database -}}
{{- if $db.cnpg.enabled -}}{{ include "opencrane-silo.dbCluster" . }}-app
{{- else if $db.existingSecret -}}{{ $db.existingSecret }}
{{- else -}}{{ include "opencrane-silo.fullname" . }}-database
{{- end -}}
{{- end -}}

{{- define "opencrane-silo.dbSecretKey" -}}
{{- if .Values.clustertenantManager.database.cnpg.enabled -}}uri{{- else -}}{{ .Values.clustertenantManager.database.secretKey }}{{- end -}}
{{- end -}}

{{- define "opencrane-silo.tokenSecret" -}}
{{- default (printf "%s-fleet-token" (include "opencrane-silo.fullname" .)) .Values.clustertenantManager.fleetApiTokenExistingSecret -}}
{{- end -}}

{{/* Restricted Pod Security for the manager: pod level, clustertenantManager.podSecurityContext merged over it. */}}
{{- define "opencrane-silo.managerPodSecurityContext" -}}
{{- $defaults := fromYaml (include "opencrane-silo.podSecurityContext" .) -}}
{{- toYaml (merge (deepCopy .Values.clustertenantManager.podSecurityContext) $defaults) -}}
{{- end -}}

{{/* Restricted Pod Security for the manager: container level, clustertenantManager.securityContext merged over it. */}}
{{- define "opencrane-silo.managerContainerSecurityContext" -}}
{{- $defaults := fromYaml (include "opencrane-silo.containerSecurityContext" .) -}}
{{- toYaml (merge (deepCopy .Values.clustertenantManager.securityContext) $defaults) -}}
{{- end -}}

{{- define "opencrane-silo.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "opencrane-silo.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{- define "opencrane-silo.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "opencrane-silo.dbSecret" . }}
      key: {{ include "opencrane-silo.dbSecretKey" . }}
{{- end -}}

{{/* Render-time checks: a value combination that cannot work fails the install here. */}}
{{- define "opencrane-silo.validate" -}}
{{- $cm := .Values.clustertenantManager -}}
{{- $mode := include "opencrane-silo.mode" . -}}
{{- if and (eq $mode "fleet-managed") (not $cm.fleetInternalUrl) -}}
{{- fail "clustertenantManager.fleetInternalUrl is required when deploymentMode is fleet-managed" -}}
{{- end -}}
{{- if and (eq $mode "fleet-managed") (not $cm.fleetApiToken) (not $cm.fleetApiTokenExistingSecret) -}}
{{- fail "clustertenantManager.fleetApiTokenExistingSecret (or fleetApiToken) is required when deploymentMode is fleet-managed" -}}
{{- end -}}
{{- if and (eq $mode "standalone") $cm.fleetInternalUrl -}}
{{- fail "clustertenantManager.fleetInternalUrl must be empty when deploymentMode is standalone" -}}
{{- end -}}
{{- if and .Values.gitops (not $cm.credentialsKeyExistingSecret) -}}
{{- fail "clustertenantManager.credentialsKeyExistingSecret is required when gitops is true (a generated key would change on every sync and lock every sealed provider key)" -}}
{{- end -}}
{{- if and .Values.gitops (eq $mode "standalone") (not $cm.fleetApiTokenExistingSecret) -}}
{{- fail "clustertenantManager.fleetApiTokenExistingSecret is required when gitops is true" -}}
{{- end -}}
{{- if and .Values.gitops .Values.litellm.enabled (not .Values.litellm.existingSecret) -}}
{{- fail "litellm.existingSecret (LITELLM_MASTER_KEY, LITELLM_SALT_KEY) is required when gitops is true" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- if and (not $cm.database.cnpg.enabled) (not $cm.database.url) (not $cm.database.existingSecret) -}}
{{- fail "clustertenantManager.database: enable cnpg, or set url or existingSecret" -}}
{{- end -}}
{{- if and $cm.oidc.issuerUrl (not $cm.oidc.clientId) (not .Values.clusterTenant.zitadel.clientId) -}}
{{- fail "clustertenantManager.oidc.clientId or clusterTenant.zitadel.clientId is required when clustertenantManager.oidc.issuerUrl is set" -}}
{{- end -}}
{{- end -}}

{{/*
One runtime plane: Deployment, Service and (optionally) its volume claim, all in the release
namespace. Called with (dict "root" $ "name" "litellm" "plane" .Values.litellm "env" (list …)).
*/}}
{{- define "opencrane-silo.plane" -}}
{{- $root := .root -}}
{{- $p := .plane -}}
{{- $name := printf "%s-%s" (include "opencrane-silo.fullname" $root) .name -}}
{{- $selector := dict "root" $root "component" .name -}}
{{- if $p.persistence.enabled }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "opencrane-silo.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
  annotations:
    helm.sh/resource-policy: keep
spec:
  accessModes: ["ReadWriteOnce"]
  {{- with $p.persistence.storageClass }}
  storageClassName: {{ . | quote }}
  {{- end }}
  resources:
    requests:
      storage: {{ $p.persistence.size | quote }}
---
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "opencrane-silo.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
spec:
  replicas: 1
  revisionHistoryLimit: 3
  {{- if $p.persistence.enabled }}
  strategy:
    type: Recreate
  {{- end }}
  selector:
    matchLabels:
      {{- include "opencrane-silo.selectorLabels" $selector | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "opencrane-silo.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .name }}
      {{- with .annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      automountServiceAccountToken: false
      securityContext:
        {{- include "opencrane-silo.podSecurityContext" $root | nindent 8 }}
      containers:
        - name: {{ .name }}
          image: {{ printf "%s:%s" $p.image.repository $p.image.tag | quote }}
          imagePullPolicy: {{ $p.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ $p.port }}
              protocol: TCP
          env:
            - name: HOME
              value: /tmp
            {{- with .env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- range $k, $v := $p.env }}
            - name: {{ $k }}
              value: {{ $v | toString | quote }}
            {{- end }}
          readinessProbe:
            httpGet:
              path: {{ $p.probes.readiness }}
              port: http
            periodSeconds: 10
            failureThreshold: 3
          livenessProbe:
            httpGet:
              path: {{ $p.probes.liveness }}
              port: http
            periodSeconds: 20
            failureThreshold: 6
          startupProbe:
            httpGet:
              path: {{ $p.probes.liveness }}
              port: http
            periodSeconds: 5
            failureThreshold: 60
          resources:
            {{- toYaml $p.resources | nindent 12 }}
          securityContext:
            {{- include "opencrane-silo.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $p.persistence.enabled }}
            - name: data
              mountPath: {{ $p.persistence.mountPath }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        {{- if $p.persistence.enabled }}
        - name: data
          persistentVolumeClaim:
            claimName: {{ $name }}
        {{- end }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "opencrane-silo.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .name }}
spec:
  type: ClusterIP
  selector:
    {{- include "opencrane-silo.selectorLabels" $selector | nindent 4 }}
  ports:
    - name: http
      port: {{ $p.port }}
      targetPort: http
      protocol: TCP
{{- end -}}

{{/* Rolls the manager's pods when their configuration changes: a digest of every value they read. */}}
{{- define "opencrane-silo.configChecksum" -}}
{{- dict "clustertenantManager" .Values.clustertenantManager "clusterTenant" .Values.clusterTenant "ingress" .Values.ingress "metrics" .Values.metrics "deploymentMode" .Values.deploymentMode | toJson | sha256sum -}}
{{- end -}}
