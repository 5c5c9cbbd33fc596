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
