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
