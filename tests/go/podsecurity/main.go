// Command podsecurity judges pods as the Kubernetes API server's Pod Security admission
// does: the pod as the API server's defaulting leaves it, judged by the evaluator of
// k8s.io/pod-security-admission at the version go.mod pins (the Kubernetes minor tfgen
// targets). tfgen's tests run it beside tfgen's own judgement
// (generator/tfgen/validate/policy/podsecurity.py) and require the same verdicts.
//
// Input: one JSON request per line on stdin,
//
//	{"level": "baseline", "version": "v1.30", "metadata": {...}, "spec": {...}}
//
// (a pod's metadata and spec, read case-sensitively as the API server reads them).
// Output: one JSON verdict per line on stdout, in order,
//
//	{"allowed": false, "reasons": ["host namespaces"], "details": ["hostNetwork=true"]}
//
// or {"error": "..."} for a request it cannot read.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	sigsjson "sigs.k8s.io/json"
)

type request struct {
	Level    string          `json:"level"`
	Version  string          `json:"version"`
	Metadata json.RawMessage `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
}

type verdict struct {
	Allowed bool     `json:"allowed"`
	Reasons []string `json:"reasons"`
	Details []string `json:"details"`
	Error   string   `json:"error,omitempty"`
}

func judge(evaluator policy.Evaluator, line []byte) verdict {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return verdict{Error: err.Error()}
	}
	level, err := api.ParseLevel(req.Level)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	version, err := api.ParseVersion(req.Version)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	var meta metav1.ObjectMeta
	var spec corev1.PodSpec
	if len(req.Metadata) > 0 {
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Metadata, &meta); err != nil {
			return verdict{Error: "metadata: " + err.Error()}
		}
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Spec, &spec); err != nil {
		return verdict{Error: "spec: " + err.Error()}
	}
	defaulted(&spec)
	results := evaluator.EvaluatePod(api.LevelVersion{Level: level, Version: version}, &meta, &spec)
	aggregate := policy.AggregateCheckResults(results)
	return verdict{Allowed: aggregate.Allowed, Reasons: nonNil(aggregate.ForbiddenReasons),
		Details: nonNil(aggregate.ForbiddenDetails)}
}

// defaulted applies the API server's defaulting of a pod (k8s.io/kubernetes,
// pkg/apis/core/v1/defaults.go, v1.30), which runs before admission, where it changes what
// the checks read: a volume without a source is an emptyDir (SetDefaults_Volume), and with
// hostNetwork a container port is also its host port (SetDefaults_PodSpec,
// defaultHostNetworkPorts).
func defaulted(spec *corev1.PodSpec) {
	for i := range spec.Volumes {
		if (spec.Volumes[i].VolumeSource == corev1.VolumeSource{}) {
			spec.Volumes[i].VolumeSource.EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
	}
	if !spec.HostNetwork {
		return
	}
	for _, containers := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range containers {
			for j := range containers[i].Ports {
				if containers[i].Ports[j].HostPort == 0 {
					containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
				}
			}
		}
	}
}

func nonNil(items []string) []string {
	if items == nil {
		return []string{}
	}
	return items
}

func main() {
	// no emulated version: each request names the policy version it is judged at (v1.30)
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "podsecurity:", err)
		os.Exit(2)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		if err := encoder.Encode(judge(evaluator, in.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, "podsecurity:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "podsecurity:", err)
		os.Exit(2)
	}
}
