{{/*
The JobSet runtime: what the training operator does for a TFJob, done at render time. Every
address of the TensorFlow cluster is known here, so each pod gets the TF_CONFIG the operator
would inject, and each task the headless Service the operator would create.
*/}}

{{/*
The TensorFlow cluster of one run as the training operator v1.9 writes it: every role's task
addresses `<run>-<role>-<index>.<namespace>.svc[.<clusterDomain>]:2222`, keyed by the role
lowercased (Go's JSON sorts the keys; so does toJson). Compact JSON.
Usage: {{ include "tfjob-experiment.tfCluster" (dict "root" $root "run" $run) }}
*/}}
{{- define "tfjob-experiment.tfCluster" -}}
{{- $v := .root.Values }}
{{- $namespace := include "tfjob-experiment.namespace" .root }}
{{- $domain := $v.clusterDomain | default "" | trimAll "." }}
{{- $cluster := dict }}
{{- range $key, $role := ($v.roles | default dict) }}
{{- if $role }}
{{- $addresses := list }}
{{- range $index := until (int $role.replicas) }}
{{- $host := printf "%s-%s-%d.%s.svc" $.run.name $key $index $namespace }}
{{- if $domain }}{{ $host = printf "%s.%s" $host $domain }}{{ end }}
{{- $addresses = append $addresses (printf "%s:%d" $host (include "tfjob-experiment.tfPort" $ | int)) }}
{{- end }}
{{- $_ := set $cluster $key $addresses }}
{{- end }}
{{- end }}
{{- toJson $cluster }}
{{- end }}

{{/*
The port of every TensorFlow task: the training operator's default (tfjob-port).
Usage: {{ include "tfjob-experiment.tfPort" . }}
*/}}
{{- define "tfjob-experiment.tfPort" -}}
2222
{{- end }}

{{/*
The environment a JobSet pod of one role gets ahead of the experiment's own: its task index,
read from the annotation the Job controller puts on every pod of an Indexed Job, then TF_CONFIG
(the kubelet expands `$(VAR)` only from variables declared before it, and the Job controller's
own JOB_COMPLETION_INDEX is appended after the container's env, too late). Skipped for a job of
one pod, as the operator skips it.
Usage: {{ include "tfjob-experiment.tfEnv" (dict "root" $root "run" $run "key" "worker") }}
*/}}
{{- define "tfjob-experiment.tfEnv" -}}
{{- $total := 0 }}
{{- range $role := (.root.Values.roles | default dict) }}{{ if $role }}{{ $total = add $total $role.replicas }}{{ end }}{{ end }}
{{- if gt (int $total) 1 -}}
- name: JOB_COMPLETION_INDEX
  valueFrom:
    fieldRef:
      fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"
- name: TF_CONFIG
  value: {{ printf "{\"cluster\":%s,\"task\":{\"type\":%s,\"index\":$(JOB_COMPLETION_INDEX)},\"environment\":\"cloud\"}" (include "tfjob-experiment.tfCluster" .) (toJson .key) | quote }}
{{- end }}
{{- end }}

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
