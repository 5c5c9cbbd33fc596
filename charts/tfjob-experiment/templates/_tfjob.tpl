{{/*
The training job: whether it runs, its runs (one TFJob each), replica types and each role's
environment.
*/}}

{{/*
"true" while the experiment trains, "" once it is retired: a retired experiment renders only
its volume and claim, so Argo CD prunes the TFJob, its NetworkPolicy and (unless
tensorboard.keep) the TensorBoard, while the data stays bound.
Usage: {{ if include "tfjob-experiment.training" . }}
*/}}
{{- define "tfjob-experiment.training" -}}
{{- if ne .Values.lifecycle "retired" }}true{{ end }}
{{- end }}

{{/*
The runs: one TFJob each. A sweep's values list them (name, args, env, per-role args and env,
placeholders already replaced by tfgen, and the run's log directory); without a sweep the
experiment is one run named after the release, with the spec-level args and env and the roles'
own, so its objects stay exactly what they were before sweeps existed.
Usage: {{ range (include "tfjob-experiment.runs" . | fromJsonArray) }}
*/}}
{{- define "tfjob-experiment.runs" -}}
{{- if .Values.runs }}
{{- toJson .Values.runs }}
{{- else }}
{{- toJson (list (dict "name" (include "tfjob-experiment.fullname" .) "suffix" "" "logDir" .Values.tensorboard.logDir "args" .Values.args "env" .Values.env "roles" .Values.roles)) }}
{{- end }}
{{- end }}

{{/*
The TFJob replica type for a values role key (the operator accepts exactly these keys).
Usage: {{ include "tfjob-experiment.replicaType" "ps" }}
*/}}
{{- define "tfjob-experiment.replicaType" -}}
{{- get (dict "master" "Master" "chief" "Chief" "worker" "Worker" "ps" "PS" "evaluator" "Evaluator") . }}
{{- end }}

{{/*
The container environment of one role: the global env, minus the names the role sets itself,
then the role env (the role wins, and no name appears twice in the container).
Usage: {{ include "tfjob-experiment.roleEnv" (dict "global" .Values.env "role" $role.env) }}
*/}}
{{- define "tfjob-experiment.roleEnv" -}}
{{- $own := dict }}
{{- range (.role | default list) }}{{ $_ := set $own .name true }}{{ end }}
{{- $env := list }}
{{- range (.global | default list) }}{{ if not (hasKey $own .name) }}{{ $env = append $env . }}{{ end }}{{ end }}
{{- range (.role | default list) }}{{ $env = append $env . }}{{ end }}
{{- with $env }}{{ toYaml . }}{{ end }}
{{- end }}
