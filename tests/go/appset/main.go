// Command appset fills an ApplicationSet's template as Argo CD's ApplicationSet controller
// does with `goTemplate: true`: every string of the template, and every key of its mappings,
// is a Go text/template, parsed with the ApplicationSet's goTemplateOptions and Argo CD's
// function map (sprig's generic functions without env, expandenv and getHostByName; sprig at
// the version Argo CD v3.3 pins) and executed on one generator file's parameters; then, as
// RenderTemplateParams and GenerateApplications do, the resources finalizer unless
// preserveResourcesOnDeletion, and the ApplicationSet's namespace.
//
// This is the fallback of Argo CD's own code: Argo CD v3.3.19's applicationset packages do
// not build from the Go module proxy (its go.mod replaces gitops-engine with a folder of its
// repository that the module does not carry: util/kube/kubectl.go calls a gitops-engine
// method the published gitops-engine lacks).
//
// Input: one JSON request per line on stdin, {"applicationSet": {...}, "params": [{...}]}.
// Output: one JSON answer per line, {"applications": [...], "errors": [...]}: per parameter
// set the filled template (apiVersion and kind added) or null, and the error ("" if none).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

const resourcesFinalizer = "resources-finalizer.argocd.argoproj.io"

var functions = func() template.FuncMap {
	funcs := sprig.GenericFuncMap()
	// Argo CD: "Avoid allowing the user to learn things about the environment."
	delete(funcs, "env")
	delete(funcs, "expandenv")
	delete(funcs, "getHostByName")
	return funcs
}()

type request struct {
	ApplicationSet map[string]any   `json:"applicationSet"`
	Params         []map[string]any `json:"params"`
}

type answer struct {
	Applications []map[string]any `json:"applications"`
	Errors       []string         `json:"errors"`
	Error        string           `json:"error,omitempty"`
}

func replace(text string, params map[string]any, options []string) (string, error) {
	tmpl := template.New("base").Funcs(functions)
	for _, option := range options {
		tmpl = tmpl.Option(option)
	}
	parsed, err := tmpl.Parse(text)
	if err != nil {
		return "", fmt.Errorf("failed to parse template %s: %w", text, err)
	}
	var out bytes.Buffer
	if err := parsed.Execute(&out, params); err != nil {
		return "", fmt.Errorf("failed to execute go template %s: %w", text, err)
	}
	return out.String(), nil
}

// filled is a copy of a template node with every string, and every key, executed.
func filled(node any, params map[string]any, options []string) (any, error) {
	switch value := node.(type) {
	case string:
		return replace(value, params, options)
	case []any:
		out := make([]any, len(value))
		for i, item := range value {
			var err error
			if out[i], err = filled(item, params, options); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(value))
		for key, item := range value {
			newItem, err := filled(item, params, options)
			if err != nil {
				return nil, err
			}
			newKey, err := replace(key, params, options)
			if err != nil {
				return nil, err
			}
			out[newKey] = newItem
		}
		return out, nil
	default:
		return node, nil
	}
}

func mapping(node any) map[string]any {
	if m, ok := node.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func generate(line []byte) answer {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return answer{Error: "request: " + err.Error()}
	}
	spec := mapping(req.ApplicationSet["spec"])
	var options []string
	for _, option := range asList(spec["goTemplateOptions"]) {
		options = append(options, fmt.Sprint(option))
	}
	out := answer{Applications: []map[string]any{}, Errors: []string{}}
	for _, params := range req.Params {
		node, err := filled(spec["template"], params, options)
		if err != nil {
			out.Applications = append(out.Applications, nil)
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		app := mapping(node)
		app["apiVersion"], app["kind"] = "argoproj.io/v1alpha1", "Application"
		metadata := mapping(app["metadata"])
		app["metadata"] = metadata
		preserve := mapping(spec["syncPolicy"])["preserveResourcesOnDeletion"] == true
		if !preserve && len(asList(metadata["finalizers"])) == 0 {
			metadata["finalizers"] = []any{resourcesFinalizer}
		}
		metadata["namespace"] = mapping(req.ApplicationSet["metadata"])["namespace"]
		out.Applications = append(out.Applications, app)
		out.Errors = append(out.Errors, "")
	}
	return out
}

func asList(node any) []any {
	if l, ok := node.([]any); ok {
		return l
	}
	return nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 256<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		if err := encoder.Encode(generate(in.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, "appset:", err)
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "appset:", err)
		os.Exit(2)
	}
}
