{{/* SPDX-License-Identifier: Apache-2.0 */}}

{{/* name is the chart name, or nameOverride. */}}
{{- define "packetfs-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
fullname prefixes every resource: fullnameOverride, else "<release>" when the
release name already contains the chart name, else "<release>-<name>".
*/}}
{{- define "packetfs-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := include "packetfs-operator.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart is "<name>-<version>" for the helm.sh/chart label. */}}
{{- define "packetfs-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* selectorLabels select the manager pods; they never change across upgrades. */}}
{{- define "packetfs-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "packetfs-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/*
devicePluginSelectorLabels select the device plugin's pods; the component
keeps them apart from the manager's.
*/}}
{{- define "packetfs-operator.devicePluginSelectorLabels" -}}
app.kubernetes.io/name: {{ include "packetfs-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: device-plugin
{{- end }}

{{/*
csiNodeSelectorLabels select the CSI node plugin's pods.
*/}}
{{- define "packetfs-operator.csiNodeSelectorLabels" -}}
app.kubernetes.io/name: {{ include "packetfs-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: csi-node
{{- end }}

{{/* labels go on every object the chart creates. */}}
{{- define "packetfs-operator.labels" -}}
helm.sh/chart: {{ include "packetfs-operator.chart" . }}
app.kubernetes.io/name: {{ include "packetfs-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: packetfs
{{- end }}

{{/* serviceAccountName is the manager's ServiceAccount. */}}
{{- define "packetfs-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "packetfs-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* image renders "<repository>:<tag>", the tag defaulting to appVersion. Call with (list <image values> $). */}}
{{- define "packetfs-operator.image" -}}
{{- $img := index . 0 }}
{{- $root := index . 1 }}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) }}
{{- end }}

{{/*
leaseName is the manager's leader-election Lease. It must equal
LeaderElectionID in cmd/manager/main.go (the chart tests check it).
*/}}
{{- define "packetfs-operator.leaseName" -}}
manager.pfs.packetfs.io
{{- end }}

{{/*
validate fails the render on combinations the schema cannot express.
*/}}
{{- define "packetfs-operator.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicaCount > 1 needs leaderElection.enabled=true: without it every replica reconciles and they fight over the same pods" }}
{{- end }}
{{- if and .Values.metrics.enabled (eq (int .Values.metrics.port) (int .Values.health.port)) }}
{{- fail "metrics.port and health.port must differ: both endpoints bind in the same pod" }}
{{- end }}
{{- end }}
