{{/*
TF_CONFIG as the training operator v1.9 writes it, written by the chart for a runtime whose
controller does not: every address of the TensorFlow cluster is known at render time, and each
pod reads its task index from the Job controller's completion index. tfgen/repo/runtimes/
tfconfig.py is the operator's rule on the Python side; the gate compares the two for every pod.
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
