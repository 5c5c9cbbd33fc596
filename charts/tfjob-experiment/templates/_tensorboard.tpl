{{/*
TensorBoard: whether it renders, its name, URL prefix, the user and groups it runs as, and
the log directories it reads.
*/}}

{{/*
"true" when the TensorBoard objects render: enabled, and the experiment still trains or
tensorboard.keep keeps it after retirement to look at the finished curves.
Usage: {{ if include "tfjob-experiment.tensorboardOn" . }}
*/}}
{{- define "tfjob-experiment.tensorboardOn" -}}
{{- if and .Values.tensorboard.enabled (or (include "tfjob-experiment.training" .) .Values.tensorboard.keep) }}true{{ end }}
{{- end }}

{{/*
Name of the TensorBoard Deployment, Service and Ingress: <name>-tensorboard.
Usage: {{ include "tfjob-experiment.tensorboardName" . }}
*/}}
{{- define "tfjob-experiment.tensorboardName" -}}
{{- printf "%s-tensorboard" (include "tfjob-experiment.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The URL path prefix TensorBoard serves under, without a trailing slash: the Ingress path prefix
when an Ingress is enabled, else empty (TensorBoard at /, as port-forward reaches it). TensorBoard's --path_prefix, its
probes and the Ingress path all use this one value, so they cannot disagree.
Usage: {{ include "tfjob-experiment.tensorboardPathPrefix" . }}
*/}}
{{- define "tfjob-experiment.tensorboardPathPrefix" -}}
{{- if .Values.tensorboard.ingress.enabled }}
{{- .Values.tensorboard.ingress.pathPrefix | trimSuffix "/" }}
{{- end }}
{{- end }}

{{/*
The user TensorBoard runs as: the trainers' podSecurityContext.runAsUser when that is at least
10000, else 10000. High UIDs never coincide with a user of the node (a container escape lands on
nobody); files the trainers write with the default umask are world-readable, so 10000 reads them,
and trainers that run as a high UID share it with TensorBoard.
Usage: {{ include "tfjob-experiment.tensorboardUser" . }}
*/}}
{{- define "tfjob-experiment.tensorboardUser" -}}
{{- $uid := int64 (.Values.podSecurityContext.runAsUser | default 0) }}
{{- if ge $uid 10000 }}{{ $uid }}{{ else }}10000{{ end }}
{{- end }}

{{/*
The primary group TensorBoard runs as, by the rule of tensorboardUser (at least 10000).
Usage: {{ include "tfjob-experiment.tensorboardGroup" . }}
*/}}
{{- define "tfjob-experiment.tensorboardGroup" -}}
{{- $gid := int64 (.Values.podSecurityContext.runAsGroup | default 0) }}
{{- if ge $gid 10000 }}{{ $gid }}{{ else }}10000{{ end }}
{{- end }}

{{/*
TensorBoard's supplementary groups: the trainers' supplementalGroups, and their primary group
when TensorBoard does not run as it, so that group-readable event files stay readable. Root's
group 0 is never added. A YAML list, or nothing.
Usage: {{ include "tfjob-experiment.tensorboardGroups" . }}
*/}}
{{- define "tfjob-experiment.tensorboardGroups" -}}
{{- $sc := .Values.podSecurityContext }}
{{- $groups := list }}
{{- range ($sc.supplementalGroups | default list) }}{{ if gt (int64 .) 0 }}{{ $groups = append $groups (int64 .) }}{{ end }}{{ end }}
{{- $gid := int64 ($sc.runAsGroup | default 0) }}
{{- if and (gt $gid 0) (ne (toString $gid) (include "tfjob-experiment.tensorboardGroup" .)) }}
{{- $groups = append $groups $gid }}
{{- end }}
{{- with ($groups | uniq) }}{{ toYaml . }}{{ end }}
{{- end }}

{{/*
TensorBoard's --logdir_spec for a sweep: `<suffix>:<log dir>` per run, joined by ','. Suffixes
are DNS labels and tfgen refuses a logDir with ',', so neither separator can occur inside.
Usage: {{ include "tfjob-experiment.logdirSpec" . }}
*/}}
{{- define "tfjob-experiment.logdirSpec" -}}
{{- $parts := list }}
{{- range .Values.runs }}{{ $parts = append $parts (printf "%s:%s" .suffix .logDir) }}{{ end }}
{{- join "," $parts }}
{{- end }}
