package k8s_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The parts of a NetworkPolicy the checks read.
type (
	networkPolicySpec struct {
		PodSelector labelSelector `yaml:"podSelector"`
		PolicyTypes []string      `yaml:"policyTypes"`
		Ingress     []struct {
			From  []policyPeer `yaml:"from"`
			Ports []struct {
				Port string `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	}
	labelSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	policyPeer struct {
		PodSelector       *labelSelector `yaml:"podSelector"`
		NamespaceSelector *labelSelector `yaml:"namespaceSelector"`
		IPBlock           any            `yaml:"ipBlock"`
	}
	// podSecurity is what the pod-level checks read beside podSpec.
	podSecurity struct {
		AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
	}
)

// pods returns the pod template of every Deployment and Job, by
// "Kind/name".
func pods(t *testing.T, objs []object) map[string]podTemplate {
	t.Helper()
	out := map[string]podTemplate{}
	for _, o := range objs {
		switch o.Kind {
		case "Job":
			out[o.Kind+"/"+o.Metadata.Name] = decodeSpec[jobSpec](t, o).Template
		case "Deployment":
			out[o.Kind+"/"+o.Metadata.Name] = decodeSpec[deploymentSpec](t, o).Template
		}
	}
	return out
}

// selects reports whether a selector's labels all hold on labels (an
// empty selector selects every pod).
func selects(sel map[string]string, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// No pod mounts a service-account token: none of them calls the
// Kubernetes API.
func TestNoServiceAccountToken(t *testing.T) {
	objs, _ := loadAll(t)
	for _, o := range objs {
		if o.Kind != "Job" && o.Kind != "Deployment" {
			continue
		}
		var s struct {
			Template struct {
				Spec podSecurity `yaml:"spec"`
			} `yaml:"template"`
		}
		if err := o.Spec.Decode(&s); err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		if a := s.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s %s: automountServiceAccountToken unset or true; want false", o.Kind, o.Metadata.Name)
		}
	}
}

// policyFor returns the NetworkPolicies that select the pods of tmpl.
func policyFor(t *testing.T, objs []object, tmpl podTemplate) []networkPolicySpec {
	t.Helper()
	var out []networkPolicySpec
	for _, o := range objs {
		if o.Kind != "NetworkPolicy" {
			continue
		}
		np := decodeSpec[networkPolicySpec](t, o)
		if selects(np.PodSelector.MatchLabels, tmpl.Metadata.Labels) {
			out = append(out, np)
		}
	}
	return out
}

// portOf reports whether a policy port (name or number) is c's port.
func portOf(c container, p string) bool {
	return slices.ContainsFunc(c.Ports, func(x port) bool { return x.Name == p || strconv.Itoa(x.ContainerPort) == p })
}

// Only crab serve pods reach Redis and the simulated models; crab serve's
// own port (the API and /metrics) is open.
func TestNetworkPolicies(t *testing.T) {
	objs, _ := loadAll(t)
	all := pods(t, objs)
	serve := all["Deployment/crab-serve"]
	for _, name := range []string{"Deployment/crab-redis", "Deployment/crab-sim"} {
		tmpl, ok := all[name]
		if !ok {
			t.Fatalf("no %s", name)
		}
		nps := policyFor(t, objs, tmpl)
		if len(nps) != 1 {
			t.Fatalf("%s: %d NetworkPolicies select its pods; want 1", name, len(nps))
		}
		np := nps[0]
		if !slices.Contains(np.PolicyTypes, "Ingress") || len(np.Ingress) == 0 {
			t.Errorf("%s: policy types %v, %d ingress rules; want Ingress, with rules", name, np.PolicyTypes, len(np.Ingress))
		}
		for i, r := range np.Ingress {
			if len(r.From) == 0 {
				t.Errorf("%s: ingress rule %d admits every source; want crab serve pods only", name, i)
			}
			for _, p := range r.From {
				if p.PodSelector == nil || p.NamespaceSelector != nil || p.IPBlock != nil ||
					len(p.PodSelector.MatchLabels) == 0 || !selects(p.PodSelector.MatchLabels, serve.Metadata.Labels) {
					t.Errorf("%s: ingress rule %d admits %s; want crab serve's pods of this namespace only", name, i, describePeer(p))
				}
			}
			for _, p := range r.Ports {
				if !portOf(tmpl.Spec.Containers[0], p.Port) {
					t.Errorf("%s: ingress rule %d opens port %s, which its container does not listen on", name, i, p.Port)
				}
			}
		}
	}
	nps := policyFor(t, objs, serve)
	if len(nps) != 1 {
		t.Fatalf("crab-serve: %d NetworkPolicies select its pods; want 1", len(nps))
	}
	scrape := serve.Metadata.Annotations["prometheus.io/port"]
	open := false
	for _, r := range nps[0].Ingress {
		for _, p := range r.Ports {
			open = open || (portOf(serve.Spec.Containers[0], p.Port) && portOf(serve.Spec.Containers[0], scrape))
		}
	}
	if !open {
		t.Errorf("crab-serve: no ingress rule opens its port %s (requests and the /metrics scrape)", scrape)
	}
}

// Redis requires the password crab serve sends, both from one Secret key:
// the serve configuration names the environment variable, never the
// password.
func TestRedisPassword(t *testing.T) {
	objs, _ := loadAll(t)
	all := pods(t, objs)
	secretOf := func(c container, name string) *keyRef {
		i := slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == name })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
			t.Fatalf("container %s: env %s is not taken from a Secret", c.Name, name)
		}
		return c.Env[i].ValueFrom.SecretKeyRef
	}
	redis := all["Deployment/crab-redis"].Spec.Containers[0]
	pass, ok := flagValue(redis.Args, "--requirepass")
	v, found := strings.CutPrefix(pass, "$(")
	v, closed := strings.CutSuffix(v, ")")
	if !ok || !found || !closed {
		t.Fatalf("redis args %q: --requirepass %q; want a $(VAR) from a Secret", redis.Args, pass)
	}
	checkVars(t, "redis", redis)
	want := *secretOf(redis, v)

	raw := readServeConfig(t)
	env := raw.Cache.RedisPasswordEnv
	if env == "" {
		t.Fatal("crab serve's cache names no redis_password_env")
	}
	if got := *secretOf(all["Deployment/crab-serve"].Spec.Containers[0], env); got != want {
		t.Errorf("crab serve takes %s from %+v; Redis its password from %+v", env, got, want)
	}
}

// serveConfig is the part of files/serve.yaml the checks read.
type serveConfig struct {
	Cache struct {
		RedisPasswordEnv string `yaml:"redis_password_env"`
	} `yaml:"cache"`
}

// readServeConfig reads crab serve's configuration as the kustomization
// mounts it.
func readServeConfig(t *testing.T) serveConfig {
	t.Helper()
	raw, err := os.ReadFile("serve/files/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c serveConfig
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("serve/files/serve.yaml: %v", err)
	}
	return c
}

// describePeer shows a NetworkPolicy peer in a failure message.
func describePeer(p policyPeer) string {
	switch {
	case p.IPBlock != nil:
		return fmt.Sprintf("an ipBlock %v", p.IPBlock)
	case p.NamespaceSelector != nil:
		return fmt.Sprintf("namespaces %v", p.NamespaceSelector.MatchLabels)
	case p.PodSelector != nil:
		return fmt.Sprintf("pods %v", p.PodSelector.MatchLabels)
	}
	return "every source"
}
