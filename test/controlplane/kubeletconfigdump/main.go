// Command kubeletconfigdump prints, as JSON, what the pinned release's kubelet knows of its own
// configuration: every field of KubeletConfiguration v1beta1 (with its Go type and, for structs,
// its fields), the defaults SetDefaults_KubeletConfiguration gives an empty configuration, and
// every feature gate the kubelet's --feature-gates knows with its default, stage and lock.
// scripts/kubeletconfig/extract.mjs turns it into src/cli/kubeletConfigApi.ts.
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	_ "k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
)

type field struct {
	Name   string  `json:"name"`
	GoType string  `json:"goType"`
	Fields []field `json:"fields,omitempty"`
}

type gate struct {
	Name       string   `json:"name"`
	Default    bool     `json:"default"`
	PreRelease string   `json:"preRelease"`
	Locked     bool     `json:"locked"`
	DependsOn  []string `json:"dependsOn,omitempty"`
}

type flag struct {
	Name       string `json:"name"`
	Shorthand  string `json:"shorthand,omitempty"`
	Type       string `json:"type"`
	Deprecated string `json:"deprecated,omitempty"`
	Hidden     bool   `json:"hidden,omitempty"`
}

// Structs whose fields are listed: the kubelet's own nested types and the logging configuration;
// metav1.Duration, resource.Quantity and the like are values.
func listsFields(t reflect.Type) bool {
	pkg := t.PkgPath()
	return t.Kind() == reflect.Struct && (strings.HasSuffix(pkg, "kubelet/config/v1beta1") || strings.HasSuffix(pkg, "component-base/logs/api/v1") || strings.HasSuffix(pkg, "component-base/tracing/api/v1"))
}

func fieldsOf(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")
		if f.Anonymous && tag[0] == "" {
			// An embedded struct's fields are the outer struct's in JSON (TextOptions' OutputRoutingOptions);
			// TypeMeta's apiVersion and kind are not settings.
			if f.Type.Kind() == reflect.Struct && f.Type.Name() != "TypeMeta" {
				out = append(out, fieldsOf(f.Type)...)
			}
			continue
		}
		if tag[0] == "-" || tag[0] == "" {
			continue
		}
		entry := field{Name: tag[0], GoType: f.Type.String()}
		inner := f.Type
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice || inner.Kind() == reflect.Map {
			inner = inner.Elem()
		}
		if listsFields(inner) {
			entry.Fields = fieldsOf(inner)
		}
		out = append(out, entry)
	}
	return out
}

func main() {
	// cmd/kubelet/app/server.go registers the logging gates with the kubelet's feature gate.
	if err := logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate); err != nil {
		panic(err)
	}
	scheme, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		panic(err)
	}
	defaults := &kubeletconfigv1beta1.KubeletConfiguration{}
	scheme.Default(defaults)

	dependencies := map[featuregate.Feature][]featuregate.Feature{}
	if withDeps, ok := utilfeature.DefaultMutableFeatureGate.(interface {
		Dependencies() map[featuregate.Feature][]featuregate.Feature
	}); ok {
		dependencies = withDeps.Dependencies()
	}
	var gates []gate
	for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		var deps []string
		for _, dep := range dependencies[name] {
			deps = append(deps, string(dep))
		}
		sort.Strings(deps)
		gates = append(gates, gate{Name: string(name), Default: spec.Default, PreRelease: string(spec.PreRelease), Locked: spec.LockToDefault, DependsOn: deps})
	}
	sort.Slice(gates, func(i, j int) bool { return gates[i].Name < gates[j].Name })

	// The kubelet's command line as NewKubeletCommand builds it (cmd/kubelet/app/server.go).
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	options.NewKubeletFlags().AddFlags(fs)
	kubeletConfig, err := options.NewKubeletConfiguration()
	if err != nil {
		panic(err)
	}
	options.AddKubeletConfigFlags(fs, kubeletConfig)
	options.AddGlobalFlags(fs)
	var flags []flag
	fs.VisitAll(func(f *pflag.Flag) {
		flags = append(flags, flag{Name: f.Name, Shorthand: f.Shorthand, Type: f.Value.Type(), Deprecated: f.Deprecated, Hidden: f.Hidden})
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })

	out := map[string]any{
		"flags":    flags,
		"fields":   fieldsOf(reflect.TypeOf(kubeletconfigv1beta1.KubeletConfiguration{})),
		"defaults": defaults,
		"gates":    gates,
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
