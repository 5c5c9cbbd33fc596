{{/*
The JobSet runtime: how the training operator's run policy becomes a JobSet's and its Jobs'
(success, restarts by exit code). The TF_CONFIG each pod gets is in `_tfconfig.tpl`, each
task's Service in `jobset-services.yaml`.
*/}}

{{/*
The replicated job whose success completes the JobSet, and how: the chief or master when there
is one (the operator's rule); else the workers, all of them with runPolicy.successPolicy
AllWorkers, or worker 0 (its Job's successPolicy) as the operator's default.
Usage: {{ include "tfjob-experiment.successPolicy" . }}
*/}}
{{- define "tfjob-experiment.successPolicy" -}}
{{- $roles := .Values.roles | default dict }}
{{- $leader := "" }}
{{- range $key := list "chief" "master" }}{{ if get $roles $key }}{{ $leader = $key }}{{ end }}{{ end }}
{{- if $leader -}}
operator: Any
targetReplicatedJobs:
  - {{ $leader }}
{{- else if eq .Values.runPolicy.successPolicy "AllWorkers" -}}
operator: All
targetReplicatedJobs:
  - worker
{{- else -}}
operator: Any
targetReplicatedJobs:
  - worker
{{- end }}
{{- end }}

{{/*
Whether worker 0 alone completes the workers' Job (no chief or master, no AllWorkers): "true" or "".
Usage: {{ if include "tfjob-experiment.workerZeroSucceeds" . }}
*/}}
{{- define "tfjob-experiment.workerZeroSucceeds" -}}
{{- $roles := .Values.roles | default dict }}
{{- if not (or (get $roles "chief") (get $roles "master") (eq .Values.runPolicy.successPolicy "AllWorkers")) }}true{{ end }}
{{- end }}

{{/*
A role's restartPolicy as a Job's pod restartPolicy: ExitCode restarts by exit code, which a
Job does with restartPolicy Never and a podFailurePolicy.
Usage: {{ include "tfjob-experiment.podRestartPolicy" $role }}
*/}}
{{- define "tfjob-experiment.podRestartPolicy" -}}
{{- $policy := .restartPolicy | default "OnFailure" }}
{{- if eq $policy "ExitCode" }}Never{{ else }}{{ $policy }}{{ end }}
{{- end }}

{{/*
The training operator's ExitCode rule as a Job's podFailurePolicy: exit codes 1-127 are the
program's own failure and fail the job; 128-255 (killed by a signal) count as a retry.
Usage: {{ include "tfjob-experiment.exitCodePolicy" . }}
*/}}
{{- define "tfjob-experiment.exitCodePolicy" -}}
rules:
  - action: Count
    onExitCodes:
      containerName: tensorflow
      operator: In
      values: [{{ untilStep 128 256 1 | join ", " }}]
  - action: FailJob
    onExitCodes:
      containerName: tensorflow
      operator: NotIn
      values: [0]
{{- end }}
