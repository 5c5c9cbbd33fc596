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
