{{/* DRA attribution (docs/dra.md). "true" when the exporter resolves DRA
devices through the node's ResourceSlices, and so needs get/list/watch on
resourceslices.resource.k8s.io and its service-account token: pod
attribution on, and kubernetes.dra true, or auto and the cluster serves a
resource.k8s.io version with ResourceSlices (v1 since Kubernetes 1.34, the
betas before; `helm template` needs --api-versions to say so). */}}
{{- define "gpu-exporter.draReader" -}}
{{- $k := .Values.kubernetes }}
{{- $mode := toString $k.dra }}
{{- $served := or (.Capabilities.APIVersions.Has "resource.k8s.io/v1") (.Capabilities.APIVersions.Has "resource.k8s.io/v1beta2") (.Capabilities.APIVersions.Has "resource.k8s.io/v1beta1") }}
{{- if and $k.attribution (or (eq $mode "true") (and (eq $mode "auto") $served)) }}true{{ end }}
{{- end }}

{{/* --kubernetes.dra, with pod attribution: the mode asked for when the
chart grants the RBAC, else false (no token, no RBAC: whole DRA GPUs still
resolve by minor number). Last but extraArgs, which may override it. */}}
{{- define "gpu-exporter.draArg" -}}
{{- if .Values.kubernetes.attribution }}
- --kubernetes.dra={{ if include "gpu-exporter.draReader" . }}{{ toString .Values.kubernetes.dra }}{{ else }}false{{ end }}
{{- end }}
{{- end }}
