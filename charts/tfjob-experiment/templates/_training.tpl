{{/*
What every runtime's job is made of, whatever the runtime: whether the experiment trains, its
runs, its roles and their replica types, each role's environment and pod, the Kueue labels and
whether the job starts suspended. A runtime's own template (`tfjob.yaml`, `jobset.yaml`) lays
these out in its kind.
*/}}
{{/*
"true" while the experiment trains, "" once it is retired: a retired experiment renders only
its volume and claim, so Argo CD prunes the job, its NetworkPolicy and (unless
tensorboard.keep) the TensorBoard, while the data stays bound.
Usage: {{ if include "tfjob-experiment.training" . }}
*/}}
{{- define "tfjob-experiment.training" -}}
{{- if ne .Values.lifecycle "retired" }}true{{ end }}
{{- end }}

{{/*
The runs: one job each (a TFJob or a JobSet, as the runtime says). A sweep's values list them (name, args, env, per-role args and env,
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
The roles of a TensorFlow cluster, each with its replica type (the training operator accepts
exactly these keys; tfgen/repo/naming.py is their home on the Python side, and a test renders
every role of both). The one list of roles: every runtime's job lists its roles in the order of
`roleKeys`.
Usage: {{ include "tfjob-experiment.replicaTypes" . | fromJson }}
*/}}
{{- define "tfjob-experiment.replicaTypes" -}}
{{- toJson (dict "chief" "Chief" "evaluator" "Evaluator" "master" "Master" "ps" "PS" "worker" "Worker") }}
{{- end }}

{{/*
Every role key, sorted: the order in which a job lists its roles.
Usage: {{ range $key := include "tfjob-experiment.roleKeys" . | fromJsonArray }}
*/}}
{{- define "tfjob-experiment.roleKeys" -}}
{{- include "tfjob-experiment.replicaTypes" . | fromJson | keys | sortAlpha | toJson }}
{{- end }}

{{/*
The replica type of a role key.
Usage: {{ include "tfjob-experiment.replicaType" "ps" }}
*/}}
{{- define "tfjob-experiment.replicaType" -}}
{{- get (include "tfjob-experiment.replicaTypes" . | fromJson) . }}
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

{{/*
A training pod template, the same on every runtime: one role's pod as a TFJob replica type or a
JobSet replicated job runs it. A runtime adds what it must: the JobSet's TF_CONFIG (`env`, put
before the experiment's own) and its port (`ports`); the training operator adds both itself.
Usage: {{ include "tfjob-experiment.trainingPod" (dict "root" $root "key" "worker" "role" $role "run" $run "env" list "ports" list "restartPolicy" "") }}
*/}}
{{- define "tfjob-experiment.trainingPod" -}}
{{- $v := .root.Values }}
{{- $role := .role }}
{{- $own := get (.run.roles | default dict) .key | default dict -}}
metadata:
  labels:
    {{- include "tfjob-experiment.podLabels" (dict "context" .root "component" "training") | nindent 4 }}
  annotations:
    {{- include "tfjob-experiment.annotations" .root | nindent 4 }}
    {{- if not $v.istioSidecar }}
    # a sidecar would keep finished replicas running and intercept replica traffic
    sidecar.istio.io/inject: "false"
    {{- end }}
spec:
  {{- with .restartPolicy }}
  restartPolicy: {{ . | quote }}
  {{- end }}
  {{- with $v.serviceAccountName }}
  serviceAccountName: {{ . | quote }}
  {{- end }}
  {{- with $v.priorityClassName }}
  priorityClassName: {{ . | quote }}
  {{- end }}
  {{- with $v.schedulerName }}
  schedulerName: {{ . | quote }}
  {{- end }}
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- range . }}
    - name: {{ . | quote }}
    {{- end }}
  {{- end }}
  securityContext:
    {{- with omit ($v.podSecurityContext | default dict) "seccompProfile" }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    # the runtime's default syscall filter unless the spec turns it off
    seccompProfile:
      type: {{ dig "seccompProfile" "type" "RuntimeDefault" ($v.podSecurityContext | default dict) | quote }}
  {{- with $role.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $role.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    # the runtime finds the container by this name (the training operator adds port
    # tfjob-port 2222 and TF_CONFIG to it)
    - name: tensorflow
      image: {{ $role.image | default $v.image | quote }}
      imagePullPolicy: {{ $v.imagePullPolicy | quote }}
      {{- with ($role.command | default $v.command) }}
      command:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with ($own.args | default .run.args) }}
      args:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.workingDir }}
      workingDir: {{ . | quote }}
      {{- end }}
      {{- $env := include "tfjob-experiment.roleEnv" (dict "global" .run.env "role" $own.env) }}
      {{- if or .env $env }}
      env:
        {{- with .env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- with $env }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- end }}
      {{- with .ports }}
      ports:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $role.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      # training needs no privilege: no setuid escalation, no Linux capability
      securityContext:
        allowPrivilegeEscalation: false
        capabilities:
          drop:
            - ALL
      volumeMounts:
        - name: data
          mountPath: {{ $v.storage.mountPath | quote }}
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: {{ include "tfjob-experiment.claimName" .root | quote }}
{{- end }}

{{/*
The Kueue labels of a job: its LocalQueue and WorkloadPriorityClass (none without a queue).
Usage: {{ include "tfjob-experiment.kueueLabels" . }}
*/}}
{{- define "tfjob-experiment.kueueLabels" -}}
{{- with .Values.kueue.queue -}}
kueue.x-k8s.io/queue-name: {{ . | quote }}
{{- with $.Values.kueue.priority }}
kueue.x-k8s.io/priority-class: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Whether the job is created suspended: only when the spec asks and no queue admits it (Kueue
owns `suspend` of a queued job: it creates the job suspended and unsuspends it on admission).
"true" or "".
Usage: {{ if include "tfjob-experiment.suspended" . }}
*/}}
{{- define "tfjob-experiment.suspended" -}}
{{- if and .Values.runPolicy.suspend (not .Values.kueue.queue) }}true{{ end }}
{{- end }}
