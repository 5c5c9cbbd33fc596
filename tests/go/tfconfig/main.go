// Command tfconfig computes what the training operator computes for a TFJob's pods: the
// TF_CONFIG it appends to each pod's `tensorflow` container (TFJobReconciler.SetClusterSpec,
// training-operator v1.9 as go.mod pins it) and each pod's and Service's name
// (common.GenGeneralName). tfgen's tests run it beside generator/tfgen/repo/runtimes/tfconfig.py and
// require the same values.
//
// Input: one JSON request per line on stdin,
//
//	{"tfjob": {...a kubeflow.org/v1 TFJob...}, "clusterDomain": ""}
//
// (clusterDomain is the operator's CUSTOM_CLUSTER_DOMAIN), defaulted as the operator's
// defaulting webhook does (SetDefaults_TFJob). Output: one JSON answer per line,
//
//	{"pods": [{"type": "Worker", "index": 0, "name": "mnist-worker-0", "tfConfig": "..."}]}
//
// with tfConfig null where the operator sets none, or {"error": "..."}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
	"github.com/kubeflow/training-operator/pkg/controller.v1/tensorflow"
	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

type request struct {
	TFJob         json.RawMessage `json:"tfjob"`
	ClusterDomain string          `json:"clusterDomain"`
}

type pod struct {
	Type     string  `json:"type"`
	Index    int     `json:"index"`
	Name     string  `json:"name"`
	TFConfig *string `json:"tfConfig"`
}

type answer struct {
	Pods  []pod  `json:"pods"`
	Error string `json:"error,omitempty"`
}

func compute(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{Error: err.Error()}
	}
	var job kubeflowv1.TFJob
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.TFJob, &job); err != nil {
		return answer{Error: "tfjob: " + err.Error()}
	}
	// What the operator's defaulting gives every TFJob before it is reconciled: replica type
	// names in camel case, one replica where none is said, the default port.
	kubeflowv1.SetDefaults_TFJob(&job)
	// The operator reads its cluster domain from its environment.
	if err := os.Setenv(tensorflow.EnvCustomClusterDomain, req.ClusterDomain); err != nil {
		return answer{Error: err.Error()}
	}
	types := make([]string, 0, len(job.Spec.TFReplicaSpecs))
	for rtype := range job.Spec.TFReplicaSpecs {
		types = append(types, string(rtype))
	}
	sort.Strings(types)
	reconciler := &tensorflow.TFJobReconciler{}
	out := answer{Pods: []pod{}}
	for _, rtype := range types {
		spec := job.Spec.TFReplicaSpecs[kubeflowv1.ReplicaType(rtype)]
		replicas := int(*spec.Replicas)
		// The operator passes the replica type lowercased (common/pod.go).
		rt := strings.ToLower(rtype)
		for i := 0; i < replicas; i++ {
			index := strconv.Itoa(i)
			template := spec.Template.DeepCopy()
			if err := reconciler.SetClusterSpec(&job, template, rt, index); err != nil {
				return answer{Error: fmt.Sprintf("%s %d: %v", rtype, i, err)}
			}
			out.Pods = append(out.Pods, pod{Type: rtype, Index: i,
				Name: common.GenGeneralName(job.Name, rt, index), TFConfig: tfConfigOf(template)})
		}
	}
	return out
}

// tfConfigOf is the TF_CONFIG value SetClusterSpec put in the `tensorflow` container, if any.
func tfConfigOf(template *corev1.PodTemplateSpec) *string {
	for _, container := range template.Spec.Containers {
		if container.Name != kubeflowv1.TFJobDefaultContainerName {
			continue
		}
		for _, env := range container.Env {
			if env.Name == "TF_CONFIG" {
				value := env.Value
				return &value
			}
		}
	}
	return nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		if err := encoder.Encode(compute(in.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, "tfconfig:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "tfconfig:", err)
		os.Exit(2)
	}
}
