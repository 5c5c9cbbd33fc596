{{/*
Labels and annotations of objects and pod templates, and the labels each runtime's controllers
set on its pods (the NetworkPolicy selects a run's pods by them).
*/}}

{{/*
Selector labels: stable for the life of an object (Deployment selectors are immutable).
Usage: {{ include "tfjob-experiment.selectorLabels" (dict "context" . "component" "tensorboard") }}
*/}}
{{- define "tfjob-experiment.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tfjob-experiment.name" .context | quote }}
app.kubernetes.io/instance: {{ include "tfjob-experiment.fullname" .context | quote }}
app.kubernetes.io/component: {{ .component | quote }}
{{- end }}

{{/*
Labels for pod templates: selector labels, part-of, managed-by and the experiment's own labels
(the schema keeps those out of the app.kubernetes.io/, helm.sh/ and tfgen.io/ prefixes, so no key
appears twice), but no chart or version label, so that a chart release never rolls a TensorBoard or changes a
TFJob's pod template.
Usage: {{ include "tfjob-experiment.podLabels" (dict "context" . "component" "training") }}
*/}}
{{- define "tfjob-experiment.podLabels" -}}
{{ include "tfjob-experiment.selectorLabels" . }}
app.kubernetes.io/part-of: tfgen
app.kubernetes.io/managed-by: {{ .context.Release.Service | quote }}
{{- with .context.Values.experiment.labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Labels for top-level object metadata: the pod labels plus version and helm.sh/chart.
Usage: {{ include "tfjob-experiment.labels" (dict "context" . "component" "storage") }}
*/}}
{{- define "tfjob-experiment.labels" -}}
{{ include "tfjob-experiment.podLabels" . }}
app.kubernetes.io/version: {{ .context.Chart.AppVersion | quote }}
helm.sh/chart: {{ include "tfjob-experiment.chart" .context | quote }}
{{- end }}

{{/*
Annotations every object carries: the owner, the run it reruns (if any) and the experiment's
own annotations.
Usage: {{ include "tfjob-experiment.annotations" . }}
*/}}
{{- define "tfjob-experiment.annotations" -}}
tfgen.io/owner: {{ .Values.experiment.owner | quote }}
{{- with .Values.experiment.rerunOf }}
tfgen.io/rerun-of: {{ . | quote }}
{{- end }}
{{- with .Values.experiment.annotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The labels training-operator v1.9 sets on every pod of this experiment's TFJob (its controller
name and the job name; it also sets replica-type, replica-index and, on the leader, job-role).
The NetworkPolicy selects the job's pods by them. Their one home on the Python side is
tfgen/repo/chart.py, which a test holds in step with this helper.
Usage: {{ include "tfjob-experiment.operatorSelector" $run.name }} (one run's TFJob name)
*/}}
{{- define "tfjob-experiment.operatorSelector" -}}
training.kubeflow.org/operator-name: "tfjob-controller"
training.kubeflow.org/job-name: {{ . | quote }}
{{- end }}

{{/*
The label the JobSet controller sets on every pod of one JobSet (the run): the NetworkPolicy of
runtime jobset selects the run's pods by it. Its one home on the Python side is
tfgen/repo/runtimes/jobset.py.
Usage: {{ include "tfjob-experiment.jobsetSelector" $run.name }}
*/}}
{{- define "tfjob-experiment.jobsetSelector" -}}
jobset.sigs.k8s.io/jobset-name: {{ . | quote }}
{{- end }}

{{/*
The labels of one task's pod of a JobSet run: the JobSet's, the replicated job's (the role),
and the completion index the Job controller sets (the task index).
Usage: {{ include "tfjob-experiment.jobsetTaskSelector" (dict "run" $run.name "key" "worker" "index" 0) }}
*/}}
{{- define "tfjob-experiment.jobsetTaskSelector" -}}
{{ include "tfjob-experiment.jobsetSelector" .run }}
jobset.sigs.k8s.io/replicatedjob-name: {{ .key | quote }}
batch.kubernetes.io/job-completion-index: {{ .index | toString | quote }}
{{- end }}

{{/*
The labels selecting every training pod of one run, on the experiment's runtime: the helper of
that runtime's selector, by name; a runtime without one fails the render (the values schema
lists the runtimes, and this table must know each).
Usage: {{ include "tfjob-experiment.runSelector" (dict "root" $root "run" $run.name) }}
*/}}
{{- define "tfjob-experiment.runSelector" -}}
{{- $selectors := dict "tfjob" "tfjob-experiment.operatorSelector" "jobset" "tfjob-experiment.jobsetSelector" }}
{{- $runtime := .root.Values.runtime }}
{{- if not (hasKey $selectors $runtime) }}
{{- fail (printf "runtime %q: no selector of its pods in the chart's runSelector (known: %s)" $runtime (keys $selectors | sortAlpha | join ", ")) }}
{{- end }}
{{- include (get $selectors $runtime) .run }}
{{- end }}
