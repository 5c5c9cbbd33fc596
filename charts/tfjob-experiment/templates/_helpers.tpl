{{/*
Why no .Release.Name, .Release.Namespace or .Chart.Name anywhere in the output:
every name and namespace comes from .Values.experiment. Argo CD renders one release per
experiment, but the same chart is also rendered many times in one helm process through an
umbrella chart with one aliased dependency per experiment (an alias renames .Chart.Name and the
release is the umbrella's). Deriving nothing from the release or the chart name is what makes
both ways give byte-identical objects, and what lets a release be renamed without renaming (and
so re-creating) a running TFJob or its volume.
*/}}

{{/*
The chart's own name, a constant on purpose (see above: an alias changes .Chart.Name).
Usage: {{ include "tfjob-experiment.name" . }}
*/}}
{{- define "tfjob-experiment.name" -}}
tfjob-experiment
{{- end }}

{{/*
The experiment name, the base of every object name (TFJob, claim, TensorBoard), cut at 63
characters, the DNS label limit. The values schema already limits it to 51 so that the names the
operator derives (<name>-worker-NN) fit as well; the cut is a second line of defence.
An empty name falls back to the chart's name for `helm lint` alone: lint only logs
validateValues' fail and goes on rendering, and the chart's defaults leave the name unset; every
real render of an empty name stops at validateValues.
Usage: {{ include "tfjob-experiment.fullname" . }}
*/}}
{{- define "tfjob-experiment.fullname" -}}
{{- .Values.experiment.name | default (include "tfjob-experiment.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The namespace of every namespaced object; the PersistentVolume is cluster-scoped and has none.
An empty namespace falls back to "default" for `helm lint` alone, as fullname does.
Usage: namespace: {{ include "tfjob-experiment.namespace" . }}
*/}}
{{- define "tfjob-experiment.namespace" -}}
{{- .Values.experiment.namespace | default "default" }}
{{- end }}

{{/*
Chart name and version for the helm.sh/chart label (top-level metadata only, never pod
templates: a chart bump must not change every running pod template).
Usage: {{ include "tfjob-experiment.chart" . }}
*/}}
{{- define "tfjob-experiment.chart" -}}
{{- printf "%s-%s" (include "tfjob-experiment.name" .) .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

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
Annotations that keep the NAS volume and its claim (and so the data) through every Argo CD
sync, prune and Application deletion, and through `helm uninstall`. PV and claim are always
kept together: a kept PV whose claim was deleted turns Released and never binds again.
Usage: {{ include "tfjob-experiment.keepAnnotations" . }}
*/}}
{{- define "tfjob-experiment.keepAnnotations" -}}
argocd.argoproj.io/sync-options: Prune=false,Delete=false
helm.sh/resource-policy: keep
{{- end }}

{{/*
Name of the PersistentVolumeClaim the pods mount: the existing claim, or <name>-data.
Usage: {{ include "tfjob-experiment.claimName" . }}
*/}}
{{- define "tfjob-experiment.claimName" -}}
{{- if .Values.storage.existingClaim }}
{{- .Values.storage.existingClaim }}
{{- else }}
{{- printf "%s-data" (include "tfjob-experiment.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/*
Name of the PersistentVolume: <namespace>-<name>-data. PVs are cluster-scoped, so the namespace
is part of the name to keep it unique across namespaces. Not cut at 63: a PV name is a DNS
subdomain (253 characters), and a cut could make two experiments share a volume.
Usage: {{ include "tfjob-experiment.volumeName" . }}
*/}}
{{- define "tfjob-experiment.volumeName" -}}
{{- printf "%s-%s-data" (include "tfjob-experiment.namespace" .) (include "tfjob-experiment.fullname" .) }}
{{- end }}

{{/*
Labels the claim selects its volume by (together with volumeName): experiment and namespace,
each within the 63-character label value limit, which the volume name itself may exceed.
Usage: {{ include "tfjob-experiment.volumeSelectorLabels" . }}
*/}}
{{- define "tfjob-experiment.volumeSelectorLabels" -}}
tfgen.io/experiment: {{ include "tfjob-experiment.fullname" . | quote }}
tfgen.io/experiment-namespace: {{ include "tfjob-experiment.namespace" . | quote }}
{{- end }}

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

{{/*
Every cross-field rule the JSON schema cannot express, checked together: the chart fails once
with the full list, so a reviewer fixes everything in one round. `helm lint` only logs `fail`,
so these rules are proven by `helm template` runs in the tests.
Usage: {{ include "tfjob-experiment.validateValues" . }}
*/}}
{{- define "tfjob-experiment.validateValues" -}}
{{- $errors := list }}
{{- $v := .Values }}
{{- if not $v.experiment.name }}
{{- $errors = append $errors "experiment.name: must be set (the experiment's name, a DNS-1035 label of at most 51 characters)" }}
{{- end }}
{{- if not $v.experiment.namespace }}
{{- $errors = append $errors "experiment.namespace: must be set (the namespace the TFJob, claim and TensorBoard live in)" }}
{{- end }}
{{- if not $v.experiment.owner }}
{{- $errors = append $errors "experiment.owner: must be set (who runs the experiment, e.g. an e-mail address; written to the tfgen.io/owner annotation)" }}
{{- end }}
{{- $roles := dict }}
{{- range $key, $role := ($v.roles | default dict) }}
{{- if $role }}{{ $_ := set $roles $key $role }}{{ end }}
{{- end }}
{{- if not $roles }}
{{- $errors = append $errors "roles: no role is set (set at least one of master, chief, worker, ps, evaluator)" }}
{{- end }}
{{- if and (hasKey $roles "master") (hasKey $roles "chief") }}
{{- $errors = append $errors "roles: master and chief are both set (the operator allows one of them; keep one)" }}
{{- end }}
{{- range $key := list "master" "chief" "evaluator" }}
{{- $role := get $roles $key }}
{{- if and $role (ne (int $role.replicas) 1) }}
{{- $errors = append $errors (printf "roles.%s.replicas: is %v (the %s role has exactly 1 replica)" $key $role.replicas $key) }}
{{- end }}
{{- end }}
{{- if and (hasKey $roles "ps") (not (hasKey $roles "worker")) }}
{{- $errors = append $errors "roles.ps: parameter servers without workers (add roles.worker, or drop roles.ps)" }}
{{- end }}
{{- range $key, $role := $roles }}
{{- if not ($role.image | default $v.image) }}
{{- $errors = append $errors (printf "roles.%s.image: no image for this role (set image or roles.%s.image)" $key $key) }}
{{- end }}
{{- end }}
{{- $envs := dict "env" $v.env }}
{{- range $key, $role := $roles }}{{ $_ := set $envs (printf "roles.%s.env" $key) $role.env }}{{ end }}
{{- range $where := keys $envs | sortAlpha }}
{{- range (get $envs $where | default list) }}
{{- if eq .name "TF_CONFIG" }}
{{- $errors = append $errors (printf "%s: sets TF_CONFIG (the training operator writes TF_CONFIG for every replica; remove it)" $where) }}
{{- end }}
{{- end }}
{{- end }}
{{- $mount := $v.storage.mountPath | default "" | trimSuffix "/" }}
{{- if not $v.storage.existingClaim }}
{{- if not $v.storage.nas.server }}
{{- $errors = append $errors "storage.nas.server: must be set (the NAS mount target host), or set storage.existingClaim" }}
{{- end }}
{{- end }}
{{- if $v.tensorboard.enabled }}
{{- $logDir := $v.tensorboard.logDir | default "" | trimSuffix "/" }}
{{- if or (not $mount) (not (hasPrefix (printf "%s/" $mount) $logDir)) }}
{{- $errors = append $errors (printf "tensorboard.logDir: %q is not strictly inside storage.mountPath %q (use a sub-directory such as %s/logs)" $v.tensorboard.logDir $v.storage.mountPath $mount) }}
{{- end }}
{{- $ing := $v.tensorboard.ingress }}
{{- if and $ing.enabled (not $ing.host) (not (trimSuffix "/" ($ing.pathPrefix | default ""))) }}
{{- $errors = append $errors (printf "tensorboard.ingress: enabled with neither host nor pathPrefix (set a host, or a pathPrefix such as /tb/%s: an Ingress for every host at / would take over the controller's default route)" $v.experiment.name) }}
{{- end }}
{{- if and $v.tensorboard.ingress.tlsSecretName (not $v.tensorboard.ingress.host) }}
{{- $errors = append $errors "tensorboard.ingress.host: must be set when tlsSecretName is set (a TLS certificate is for a host name)" }}
{{- end }}
{{- end }}
{{- $sp := $v.runPolicy.schedulingPolicy | default dict }}
{{- if and $sp.minAvailable $roles }}
{{- $total := 0 }}
{{- range $roles }}{{ $total = add $total (int .replicas) }}{{ end }}
{{- if gt (int $sp.minAvailable) (int $total) }}
{{- $errors = append $errors (printf "runPolicy.schedulingPolicy.minAvailable: is %v but the job has only %d replicas (gang scheduling would wait forever)" $sp.minAvailable $total) }}
{{- end }}
{{- end }}
{{- if $errors }}
{{- fail (printf "\n\ntfjob-experiment: %d problem(s) in the values:\n  - %s\n" (len $errors) (join "\n  - " $errors)) }}
{{- end }}
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
