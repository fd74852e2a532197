{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "gpu-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects. */}}
{{- define "gpu-exporter.fullname" -}}
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

{{- define "gpu-exporter.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "gpu-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpu-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gpu-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: exporter
app.kubernetes.io/part-of: gpu-exporter
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "gpu-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gpu-exporter.image" -}}
{{- $img := .Values.image }}
{{- if $img.digest }}
{{- printf "%s@%s" $img.repository $img.digest }}
{{- else }}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) }}
{{- end }}
{{- end }}

{{/* Whether Prometheus reaches the pod over TLS. */}}
{{- define "gpu-exporter.https" -}}
{{- if or .Values.rbacProxy.enabled (and .Values.webConfig.enabled .Values.webConfig.tls) }}true{{- end }}
{{- end }}

{{/* Directory of the pod-resources socket: the hostPath the pod mounts. */}}
{{/* Whether the exporter reads pods from the API server (pod labels or
UIDs): it then needs list/watch on pods and its service-account token. */}}
{{- define "gpu-exporter.podReader" -}}
{{- if or (and .Values.kubernetes.attribution (or .Values.kubernetes.podLabels .Values.kubernetes.podUID .Values.kubernetes.workloadInfo)) .Values.processAccounting.enabled }}true{{ end }}
{{- end }}

{{- define "gpu-exporter.podResourcesDir" -}}
{{- dir .Values.kubernetes.podResourcesSocket }}
{{- end }}

{{- define "gpu-exporter.countersConfigMap" -}}
{{- default (printf "%s-counters" (include "gpu-exporter.fullname" .)) .Values.counters.existingConfigMap }}
{{- end }}

{{- define "gpu-exporter.webConfigSecret" -}}
{{- default (printf "%s-web-config" (include "gpu-exporter.fullname" .)) .Values.webConfig.existingSecret }}
{{- end }}

{{/* The exporter's flags, one per line. */}}
{{- define "gpu-exporter.args" -}}
{{- $v := .Values }}
{{- if $v.rbacProxy.enabled }}
- --web.listen-address=127.0.0.1:{{ $v.rbacProxy.upstreamPort }}
{{- else }}
- --web.listen-address=:{{ $v.exporter.port }}
{{- end }}
- --web.telemetry-path={{ $v.exporter.telemetryPath }}
{{- if $v.webConfig.enabled }}
- --web.config.file=/etc/gpu-exporter/web/web-config.yml
{{- with $v.exporter.healthPort }}
- --web.health-listen-address=:{{ . }}
{{- end }}
{{- end }}
{{- if $v.exporter.enablePprof }}
- --web.enable-pprof
{{- end }}
{{- if $v.gpuOperator.enabled }}
- --source=dcgm
{{- else }}
- --source={{ $v.exporter.source }}
{{- end }}
{{- if or (eq $v.naming "dcgm") $v.gpuOperator.inPlace }}
- --naming=dcgm
{{- with $v.dcgmRelease }}
- --naming.dcgm-release={{ . }}
{{- end }}
{{- end }}
- --collect.interval={{ $v.exporter.collectInterval }}
{{- if or $v.counters.csv $v.counters.existingConfigMap }}
- --collect.counters=/etc/gpu-exporter/counters/counters.csv
{{- end }}
{{- if $v.kubernetes.attribution }}
- --kubernetes.enabled=true
- --kubernetes.pod-resources-socket={{ $v.kubernetes.podResourcesSocket }}
- --kubernetes.gpu-id-type={{ $v.kubernetes.gpuIdType }}
{{- with $v.kubernetes.refreshInterval }}
- --kubernetes.refresh-interval={{ . }}
{{- end }}
{{- with $v.kubernetes.resourceNames }}
- --kubernetes.resource-names={{ join "," . }}
{{- end }}
{{- with $v.kubernetes.podLabels }}
- --kubernetes.pod-labels={{ . }}
{{- end }}
{{- if $v.kubernetes.podUID }}
- --kubernetes.pod-uid
{{- end }}
{{- if $v.kubernetes.workloadInfo }}
- --kubernetes.workload-info
{{- end }}
{{- else }}
{{- if or $v.kubernetes.podLabels $v.kubernetes.podUID }}
{{- fail "kubernetes.podLabels and kubernetes.podUID need kubernetes.attribution: they label attributed series" }}
{{- end }}
{{- if $v.kubernetes.workloadInfo }}
{{- fail "kubernetes.workloadInfo needs kubernetes.attribution: gpu_workload_info describes the pods holding GPUs" }}
{{- end }}
- --kubernetes.enabled=false
{{- end }}
{{- if $v.gpuOperator.enabled }}
- --dcgm.mode=remote
- --dcgm.remote-address=nvidia-dcgm.{{ $v.gpuOperator.namespace }}.svc:5555
{{- else }}
- --dcgm.mode={{ $v.dcgm.mode }}
{{- if eq $v.dcgm.mode "remote" }}
- --dcgm.remote-address={{ required "dcgm.remoteAddress is required when dcgm.mode=remote" $v.dcgm.remoteAddress }}
{{- end }}
{{- end }}
{{- if $v.processAccounting.enabled }}
- --collect.processes={{ $v.processAccounting.mode }}
- --path.procfs=/host/proc
{{- else }}
- --collect.processes=off
{{- end }}
- --log.level={{ $v.exporter.logLevel }}
- --log.format={{ $v.exporter.logFormat }}
{{- include "gpu-exporter.draArg" . }}
{{- range $v.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* The naming the exporter runs with, and where it comes from, as YAML
{naming, from}: the `naming` value (gpuOperator.inPlace implies dcgm)
reaches the exporter as --naming=dcgm on the command line; extraArgs may
give --naming again (the last one wins, as pflag reads them); without any
--naming flag, extraEnv's GPU_EXPORTER_NAMING (a flag wins over its
environment twin); else prometheus. */}}
{{- define "gpu-exporter.naming" -}}
{{- $naming := "prometheus" }}
{{- $from := "the default" }}
{{- range .Values.extraEnv }}
{{- if and (eq (toString .name) "GPU_EXPORTER_NAMING") (hasKey . "value") }}
{{- $naming = toString .value }}
{{- $from = "extraEnv GPU_EXPORTER_NAMING" }}
{{- end }}
{{- end }}
{{- $args := include "gpu-exporter.args" . | fromYamlArray }}
{{- $chartArgs := sub (len $args) (len .Values.extraArgs) }}
{{- range $i, $a := $args }}
{{- $a = toString $a }}
{{- if hasPrefix "--naming=" $a }}
{{- $naming = trimPrefix "--naming=" $a }}
{{- $from = ternary "extraArgs" (ternary "gpuOperator.inPlace" "the naming value" $.Values.gpuOperator.inPlace) (ge $i $chartArgs) }}
{{- end }}
{{- end }}
{{- toYaml (dict "naming" $naming "from" $from) }}
{{- end }}

{{/* Refuses process accounting's per-process mode under dcgm naming,
which the exporter refuses at start (exit 2: "--collect.processes=process
needs --naming=prometheus"), so the pod would crash-loop. The naming is
gpu-exporter.naming's. --collect.processes is always on the command line:
the chart's, or a later one in extraArgs (the schema makes every extraArgs
item a --flag or --flag=value). Container mode under dcgm naming only idles
(the exporter warns and starts): it renders. */}}
{{- define "gpu-exporter.checkProcessesNaming" -}}
{{- $args := include "gpu-exporter.args" . | fromYamlArray }}
{{- $n := include "gpu-exporter.naming" . | fromYaml }}
{{- $processes := "" }}
{{- $processesFrom := "processAccounting.mode" }}
{{- $chartArgs := sub (len $args) (len .Values.extraArgs) }}
{{- range $i, $a := $args }}
{{- $a = toString $a }}
{{- if hasPrefix "--collect.processes=" $a }}
{{- $processes = trimPrefix "--collect.processes=" $a }}
{{- if ge $i $chartArgs }}{{ $processesFrom = "extraArgs" }}{{ end }}
{{- end }}
{{- end }}
{{- if and (eq $processes "process") (eq $n.naming "dcgm") }}
{{- fail (printf "--collect.processes=process (from %s) needs --naming=prometheus, but --naming=dcgm comes from %s: dcgm naming has no per-process families and the exporter refuses to start with both (the pod would crash-loop); use processAccounting.mode=container or turn process accounting off, or use Prometheus naming" $processesFrom $n.from) }}
{{- end }}
{{- end }}

{{/* Combinations the chart refuses, each with why. */}}
{{- define "gpu-exporter.checks" -}}
{{- $v := .Values }}
{{- if and $v.processAccounting.enabled $v.gpuOperator.enabled }}
{{- fail "processAccounting.enabled with gpuOperator.enabled: process accounting reads each GPU's processes through NVML, which opens the GPU device nodes (/dev/nvidia*) and holds them for the pod's life; gpuOperator mode reads DCGM from the Operator's hostengine precisely so that the exporter holds no device node while the Operator's driver manager unloads the driver or reconfigures MIG. Turn one of them off (docs/shared-gpus.md)" }}
{{- end }}
{{- $n := include "gpu-exporter.naming" . | fromYaml }}
{{- if and $v.gpuOperator.inPlace (ne $n.naming "dcgm") }}
{{- fail (printf "gpuOperator.inPlace replaces dcgm-exporter and needs dcgm naming, but --naming=%s comes from %s; drop it" $n.naming $n.from) }}
{{- end }}
{{- if eq $n.naming "dcgm" }}
{{- if and (eq (toString $v.prometheusRule.enabled) "true") (not (include "gpu-exporter.dcgmVariant" (dict "ctx" . "glob" "files/rules/dcgm/*.yaml"))) }}
{{- fail (printf "prometheusRule.enabled=true with dcgm naming (from %s): the chart's rules read Prometheus names (gpu_*), so under dcgm naming every absent-alert would fire and every hardware alert would be blind, and the chart holds no dcgm-naming variant; set prometheusRule.enabled to auto or false" $n.from) }}
{{- end }}
{{- if and (eq (toString $v.dashboards.enabled) "true") (not (include "gpu-exporter.dcgmVariant" (dict "ctx" . "glob" "files/dashboards/dcgm/*.json"))) }}
{{- fail (printf "dashboards.enabled=true with dcgm naming (from %s): the chart's dashboards query Prometheus names (gpu_*) and would show no data, and the chart holds no dcgm-naming variant; set dashboards.enabled to auto or false" $n.from) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether the chart holds files of a dcgm-naming variant (.glob). */}}
{{- define "gpu-exporter.dcgmVariant" -}}
{{- if .ctx.Files.Glob .glob }}true{{ end }}
{{- end }}

{{/* Whether the exporter runs with dcgm naming: "true" or nothing. */}}
{{- define "gpu-exporter.dcgmNaming" -}}
{{- if eq (include "gpu-exporter.naming" . | fromYaml).naming "dcgm" }}true{{ end }}
{{- end }}

{{/* The exporter container's security context: the values', plus
SYS_ADMIN when embedded DCGM collects profiling fields (the capability is
effective only for uid 0: Kubernetes sets no ambient capabilities). uid 0
is needed for the root-only pod-resources directory; without attribution
nor profiling the default uid 0 becomes 65532. */}}
{{- define "gpu-exporter.securityContext" -}}
{{- $sc := deepCopy .Values.securityContext }}
{{- $profiling := and .Values.dcgm.profiling (eq .Values.dcgm.mode "embedded") (not .Values.gpuOperator.enabled) }}
{{- if and (not .Values.kubernetes.attribution) (not $profiling) (eq (toString $sc.runAsUser) "0") }}
{{- $_ := set $sc "runAsUser" 65532 }}
{{- $_ := set $sc "runAsGroup" 65532 }}
{{- $_ := set $sc "runAsNonRoot" true }}
{{- end }}
{{- if $profiling }}
{{- $caps := default dict $sc.capabilities }}
{{- $add := default list $caps.add }}
{{- $_ := set $caps "add" (append $add "SYS_ADMIN" | uniq) }}
{{- $_ := set $sc "capabilities" $caps }}
{{- end }}
{{- toYaml $sc }}
{{- end }}

{{/* Whether the exporter serves a plain-HTTP health listener: with web
config (TLS or basic auth) and exporter.healthPort set. */}}
{{- define "gpu-exporter.healthListener" -}}
{{- if and .Values.webConfig.enabled .Values.exporter.healthPort }}true{{ end }}
{{- end }}

{{/* HTTP GET probe on path: on the plain health listener when there is
one, else on the serving port, or a TCP check where basic auth would
refuse the kubelet. port is a number with rbacProxy (the named port is
the proxy's), else the name. */}}
{{- define "gpu-exporter.probe" -}}
{{- $v := .ctx.Values }}
{{- $port := "metrics" }}
{{- if $v.rbacProxy.enabled }}{{ $port = $v.exporter.port }}{{ end }}
{{- if include "gpu-exporter.healthListener" .ctx }}
httpGet:
  path: {{ .path }}
  port: health
  scheme: HTTP
{{- else if and $v.webConfig.enabled $v.webConfig.basicAuth (not $v.rbacProxy.enabled) }}
tcpSocket:
  port: {{ $port }}
{{- else }}
httpGet:
  path: {{ .path }}
  port: {{ $port }}
  scheme: {{ if include "gpu-exporter.https" .ctx }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
{{ toYaml .probe }}
{{- end }}

{{/* The relabelling that makes honorLabels: true safe: the target's pod
identity (the exporter's own namespace, pod and container) must not reach
series of GPUs no pod holds; the node name comes from service discovery.
job and instance stay. */}}
{{- define "gpu-exporter.relabelings" -}}
{{- if not .ctx.Values.gpuOperator.inPlace }}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
- action: labeldrop
  regex: (namespace|pod|container)
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Whether a prometheus-operator object is rendered: .value is true,
false or "auto"; auto renders it when the cluster serves its kind
(monitoring.coreos.com/v1/<kind>; `helm template` needs
--api-versions monitoring.coreos.com/v1/<kind> to see it). Prints "true" or
nothing. */}}
{{- define "gpu-exporter.enabled" -}}
{{- if eq (toString .value) "auto" }}
{{- if .ctx.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" .kind) }}true{{ end }}
{{- else if .value }}true{{ end }}
{{- end }}

{{/* Labels of the prometheus-operator objects: the chart's, the release
label kube-prometheus-stack's default selectors match (monitoring.release),
and the object's own additional labels. */}}
{{- define "gpu-exporter.monitoringLabels" -}}
{{ include "gpu-exporter.labels" .ctx }}
{{- with .ctx.Values.monitoring.release }}
release: {{ . | quote }}
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Renders a rule source (files/rules/*.src.yaml, a copy of
rules/alerts.src.yaml) with the prometheusRule values: placeholders filled
from thresholds and jobSelector, disabled alerts left out, per-alert
overrides and additional rule labels and annotations applied (an alert's
own win). rules.Render in rules/render.go does the same steps for
rules/alerts.yaml; tests/deploy checks that both agree. Prints the rule
groups as YAML under "groups". */}}
{{- define "gpu-exporter.ruleSource" -}}
{{- $v := .ctx.Values.prometheusRule }}
{{- $src := .ctx.Files.Get .path }}
{{- range $k, $val := $v.thresholds }}
{{- $src = replace (printf "${%s}" $k) (toString $val) $src }}
{{- end }}
{{- $job := $v.jobSelector | default (printf "job=%q" (include "gpu-exporter.name" .ctx)) }}
{{- $src = replace "${jobSelector}" $job $src }}
{{- $src = replace "${namespaceLabel}" (include "gpu-exporter.namespaceLabel" .ctx) $src }}
{{- $src = replace "${gpuLabels}" (include "gpu-exporter.ruleGPULabels" .ctx) $src }}
{{- $src = include "gpu-exporter.ruleXIDTiers" $src }}
{{- with regexFind "\\$\\{[A-Za-z0-9]*\\}" $src }}
{{- fail (printf "%s: placeholder %s has no value in prometheusRule.thresholds" $.path .) }}
{{- end }}
{{- $doc := $src | fromYaml }}
{{- if hasKey $doc "Error" }}
{{- fail (printf "%s: %s" .path $doc.Error) }}
{{- end }}
{{- $disabled := $v.disabled | default dict }}
{{- $overrides := $v.overrides | default dict }}
{{- $groups := list }}
{{- range $g := $doc.groups }}
{{- $rules := list }}
{{- range $r := $g.rules }}
{{- if not $r.alert }}
{{- $rules = append $rules $r }}
{{- else if not (get $disabled $r.alert) }}
{{- $o := get $overrides $r.alert | default dict }}
{{- $labels := $r.labels | default dict }}
{{- with $o.severity }}{{ $_ := set $labels "severity" . }}{{ end }}
{{- with $o.for }}{{ $_ := set $r "for" . }}{{ end }}
{{- range $k, $val := $v.additionalRuleLabels }}
{{- if not (hasKey $labels $k) }}{{ $_ := set $labels $k $val }}{{ end }}
{{- end }}
{{- if $labels }}{{ $_ := set $r "labels" $labels }}{{ end }}
{{- $annotations := $r.annotations | default dict }}
{{- range $k, $val := $v.additionalRuleAnnotations }}
{{- if not (hasKey $annotations $k) }}{{ $_ := set $annotations $k $val }}{{ end }}
{{- end }}
{{- if $annotations }}{{ $_ := set $r "annotations" $annotations }}{{ end }}
{{- $rules = append $rules $r }}
{{- end }}
{{- end }}
{{- $_ := set $g "rules" $rules }}
{{- $groups = append $groups $g }}
{{- end }}
{{- toYaml (dict "groups" $groups) }}
{{- end }}

{{/*
The label that names the namespace of a GPU's holder in Prometheus
(monitoring.namespaceLabel): the rules, the dashboards and the monitors'
metric relabelings follow it.
*/}}
{{- define "gpu-exporter.namespaceLabel" -}}
{{- .Values.monitoring.namespaceLabel | default "namespace" }}
{{- end }}

{{/*
Metric relabelings that move the exporter's namespace label to
monitoring.namespaceLabel, then the user's. prometheus-operator appends its
enforcedNamespaceLabel rule after these, so the holder's namespace survives
in the new label while `namespace` becomes the monitor's namespace. Where
the Prometheus overrides honorLabels to false (monitoring.honorLabelsOverridden)
the operator's target relabeling has already set `namespace` to the
monitor's before the scrape, so Prometheus itself renamed the holder's to
exported_namespace: no copy then (it would copy the monitor's namespace).
*/}}
{{- define "gpu-exporter.metricRelabelings" -}}
{{- $label := include "gpu-exporter.namespaceLabel" .ctx }}
{{- if and (ne $label "namespace") (not .ctx.Values.gpuOperator.inPlace) (not .ctx.Values.monitoring.honorLabelsOverridden) }}
- sourceLabels: [namespace]
  regex: (.+)
  targetLabel: {{ $label }}
  replacement: $1
  action: replace
- regex: namespace
  action: labeldrop
{{- end }}
{{- with .extra }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
How a monitor's endpoint authenticates and verifies the exporter: scheme,
tlsConfig and basicAuth, from monitoring.tlsConfig and monitoring.basicAuth.
Over HTTPS the certificate is checked against monitoring.tlsConfig.ca unless
insecureSkipVerify is set explicitly; one of them is required. A web config
with basic auth needs credentials, or every scrape gets 401. .kind names the
monitor in the refusals.
*/}}
{{- define "gpu-exporter.scrapeAuth" -}}
{{- $v := .ctx.Values }}
{{- $tls := $v.monitoring.tlsConfig | default dict }}
{{- if and $v.webConfig.enabled $v.webConfig.basicAuth (not $v.monitoring.basicAuth) }}
{{- fail (printf "webConfig.basicAuth: the %s would scrape without credentials and every scrape would get 401; set monitoring.basicAuth to a Secret's keys, e.g. {username: {name: gpu-exporter-scrape, key: username}, password: {name: gpu-exporter-scrape, key: password}}" .kind) }}
{{- end }}
{{- if and $v.monitoring.basicAuth $v.rbacProxy.enabled }}
{{- fail "monitoring.basicAuth with rbacProxy: kube-rbac-proxy authenticates scrapes by service-account token, not basic auth; drop monitoring.basicAuth" }}
{{- end }}
{{- if include "gpu-exporter.https" .ctx }}
{{- if not (or $tls.ca $tls.insecureSkipVerify) }}
{{- fail (printf "the %s scrapes over HTTPS (webConfig.tls or rbacProxy) and has no way to verify the certificate: set monitoring.tlsConfig.ca to the CA bundle's Secret or ConfigMap key, e.g. {secret: {name: gpu-exporter-ca, key: ca.crt}}, or opt out of verification with monitoring.tlsConfig.insecureSkipVerify=true" .kind) }}
{{- end }}
{{- if and $tls.ca $tls.insecureSkipVerify }}
{{- fail "monitoring.tlsConfig: ca and insecureSkipVerify exclude each other (a CA that is never checked); keep one" }}
{{- end }}
scheme: https
tlsConfig:
  {{- with $tls.ca }}
  ca:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $tls.cert }}
  cert:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $tls.keySecret }}
  keySecret:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $tls.serverName }}
  serverName: {{ . }}
  {{- end }}
  {{- if $tls.insecureSkipVerify }}
  insecureSkipVerify: true
  {{- end }}
{{- end }}
{{- with $v.monitoring.basicAuth }}
basicAuth:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
In place of the GPU Operator's dcgm-exporter (gpuOperator.inPlace), the
labels, port name and jobLabel the Operator gives its exporter's Service,
pods and ServiceMonitor (NVIDIA/gpu-operator,
assets/state-dcgm-exporter/0400_service.yaml, 0500_service_monitor.yaml and
0800_daemonset.yaml), so that `job` reads nvidia-dcgm-exporter as before.
*/}}
{{- define "gpu-exporter.inPlaceLabels" -}}
app: nvidia-dcgm-exporter
{{- end }}

{{- define "gpu-exporter.servicePort" -}}
{{- ternary "gpu-metrics" "metrics" .Values.gpuOperator.inPlace }}
{{- end }}

{{- define "gpu-exporter.jobLabel" -}}
{{- ternary "app" "app.kubernetes.io/name" .Values.gpuOperator.inPlace }}
{{- end }}
