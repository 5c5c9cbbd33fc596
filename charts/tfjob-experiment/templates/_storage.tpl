{{/*
The NAS volume and its claim: their names, how the claim binds the volume, and what keeps
both (and so the data) alive.
*/}}

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
