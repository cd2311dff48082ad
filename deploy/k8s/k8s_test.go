// Package k8s_test checks the Kubernetes manifests of deploy/k8s without a
// cluster: every file parses, the Indexed Job's index reaches `crab run
// --shard`, the merge Job reads every shard once, and crab serve's
// replicas share Redis, report ready on /healthz and are scraped on
// /metrics.
package k8s_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/serve"
)

// The parts of Kubernetes objects the checks read.
type (
	object struct {
		APIVersion string    `yaml:"apiVersion"`
		Kind       string    `yaml:"kind"`
		Metadata   meta      `yaml:"metadata"`
		Spec       yaml.Node `yaml:"spec"`
		file       string
	}
	meta struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	podTemplate struct {
		Metadata meta    `yaml:"metadata"`
		Spec     podSpec `yaml:"spec"`
	}
	podSpec struct {
		RestartPolicy  string      `yaml:"restartPolicy"`
		InitContainers []container `yaml:"initContainers"`
		Containers     []container `yaml:"containers"`
		Volumes        []volume    `yaml:"volumes"`
	}
	container struct {
		Name           string        `yaml:"name"`
		Image          string        `yaml:"image"`
		Command        []string      `yaml:"command"`
		Args           []string      `yaml:"args"`
		Env            []envVar      `yaml:"env"`
		Ports          []port        `yaml:"ports"`
		ReadinessProbe *probe        `yaml:"readinessProbe"`
		VolumeMounts   []volumeMount `yaml:"volumeMounts"`
	}
	envVar struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	}
	keyRef struct {
		Name string `yaml:"name"`
		Key  string `yaml:"key"`
	}
	port struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Port          int    `yaml:"port"`
		TargetPort    string `yaml:"targetPort"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	volume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		Projected *struct {
			Sources []struct {
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
				Secret *struct {
					Name string `yaml:"name"`
				} `yaml:"secret"`
			} `yaml:"sources"`
		} `yaml:"projected"`
	}
	jobSpec struct {
		CompletionMode string      `yaml:"completionMode"`
		Completions    *int        `yaml:"completions"`
		Parallelism    *int        `yaml:"parallelism"`
		Template       podTemplate `yaml:"template"`
	}
	deploymentSpec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template podTemplate `yaml:"template"`
	}
	serviceSpec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []port            `yaml:"ports"`
	}
	serviceMonitorSpec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	}
	kustomization struct {
		Resources          []string    `yaml:"resources"`
		ConfigMapGenerator []generator `yaml:"configMapGenerator"`
		SecretGenerator    []generator `yaml:"secretGenerator"`
	}
	generator struct {
		Name     string   `yaml:"name"`
		Files    []string `yaml:"files"`
		Literals []string `yaml:"literals"`
	}
)

// isConfigFile reports whether path is a crab configuration mounted into
// pods (files/ beside a kustomization), not a Kubernetes manifest.
func isConfigFile(path string) bool {
	return filepath.Base(filepath.Dir(path)) == "files"
}

// loadAll parses every manifest under the current directory: each YAML
// file, each of its documents. Kustomizations are returned apart, by
// directory.
func loadAll(t *testing.T) ([]object, map[string]kustomization) {
	t.Helper()
	var objs []object
	kusts := map[string]kustomization{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" || isConfigFile(path) {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if filepath.Base(path) == "kustomization.yaml" {
			var k kustomization
			if err := yaml.Unmarshal(raw, &k); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			kusts[filepath.Dir(path)] = k
			return nil
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for i := 1; ; i++ {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				if i == 1 {
					return fmt.Errorf("%s: no document", path)
				}
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				return fmt.Errorf("%s: document %d: apiVersion %q, kind %q, metadata.name %q; want all three", path, i, o.APIVersion, o.Kind, o.Metadata.Name)
			}
			o.file = path
			objs = append(objs, o)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs, kusts
}

// find returns the one object of kind and name.
func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s named %s; want 1", len(found), kind, name)
	}
	return found[0]
}

func decodeSpec[T any](t *testing.T, o object) T {
	t.Helper()
	var s T
	if err := o.Spec.Decode(&s); err != nil {
		t.Fatalf("%s: %s %s: spec: %v", o.file, o.Kind, o.Metadata.Name, err)
	}
	return s
}

// Every file parses, every document is an object with a name, each
// kustomization names files that exist, and every manifest beside a
// kustomization is one of its resources.
func TestManifestsParse(t *testing.T) {
	objs, kusts := loadAll(t)
	if len(objs) == 0 || len(kusts) == 0 {
		t.Fatalf("%d objects, %d kustomizations; want some of each", len(objs), len(kusts))
	}
	seen := map[string]string{}
	for _, o := range objs {
		id := o.Kind + "/" + o.Metadata.Name
		if prev, dup := seen[id]; dup {
			t.Errorf("%s in both %s and %s", id, prev, o.file)
		}
		seen[id] = o.file
	}
	for dir, k := range kusts {
		var named []string
		named = append(named, k.Resources...)
		for _, g := range append(k.ConfigMapGenerator, k.SecretGenerator...) {
			named = append(named, g.Files...)
		}
		for _, f := range named {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s/kustomization.yaml names %s: %v", dir, f, err)
			}
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(k.Resources, b) {
				t.Errorf("%s is not among the resources of %s/kustomization.yaml", f, dir)
			}
		}
	}
}

// kubectl's own kustomize builds both stacks, when kubectl is installed.
func TestKustomizeBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	_, kusts := loadAll(t)
	for dir := range kusts {
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Errorf("kubectl kustomize %s: %v\n%s", dir, err, out)
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkVars checks that every $(VAR) in c's command line is an env var of
// c: Kubernetes leaves an undeclared reference as it is, and the command
// would get the literal text.
func checkVars(t *testing.T, where string, c container) {
	t.Helper()
	for _, a := range slices.Concat(c.Command, c.Args) {
		for _, m := range varRef.FindAllStringSubmatch(a, -1) {
			if !slices.ContainsFunc(c.Env, func(e envVar) bool { return e.Name == m[1] }) {
				t.Errorf("%s: argument %q refers to $(%s), which is not in the container's env", where, a, m[1])
			}
		}
	}
}

// flagValue returns the argument after flag (or one of its aliases).
func flagValue(args []string, flags ...string) (string, bool) {
	for i, a := range args {
		if slices.Contains(flags, a) && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// mountOf returns the volume mounted at the longest mount path that holds
// path, and path relative to it.
func mountOf(c container, vols []volume, path string) (volume, string, bool) {
	best, rel := -1, ""
	for i, m := range c.VolumeMounts {
		r, err := filepath.Rel(m.MountPath, path)
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			continue
		}
		if best < 0 || len(m.MountPath) > len(c.VolumeMounts[best].MountPath) {
			best, rel = i, r
		}
	}
	if best < 0 {
		return volume{}, "", false
	}
	i := slices.IndexFunc(vols, func(v volume) bool { return v.Name == c.VolumeMounts[best].Name })
	if i < 0 {
		return volume{}, "", false
	}
	return vols[i], rel, true
}

// shardJob is the Indexed Job, its shard count and its crab container.
func shardJob(t *testing.T, objs []object) (jobSpec, int, container) {
	t.Helper()
	var jobs []object
	for _, o := range objs {
		if o.Kind == "Job" && decodeSpec[jobSpec](t, o).CompletionMode == "Indexed" {
			jobs = append(jobs, o)
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("%d Indexed Jobs; want 1", len(jobs))
	}
	spec := decodeSpec[jobSpec](t, jobs[0])
	if spec.Completions == nil || spec.Parallelism == nil {
		t.Fatalf("Indexed Job: completions %v, parallelism %v; want both set", spec.Completions, spec.Parallelism)
	}
	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Indexed Job: %d containers; want 1", len(spec.Template.Spec.Containers))
	}
	return spec, *spec.Completions, spec.Template.Spec.Containers[0]
}

// The Indexed Job runs N shards at once, and each pod's index reaches
// `crab run --shard INDEX/N` and names the pod's own run directory on the
// shared volume.
func TestShardJob(t *testing.T) {
	objs, _ := loadAll(t)
	spec, n, c := shardJob(t, objs)
	if n < 2 || *spec.Parallelism != n {
		t.Errorf("completions %d, parallelism %d; want equal and at least 2", n, *spec.Parallelism)
	}
	if p := spec.Template.Spec.RestartPolicy; p != "Never" && p != "OnFailure" {
		t.Errorf("restartPolicy %q; want Never or OnFailure (a Job's pods must end)", p)
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		t.Fatalf("args %q; want crab run", c.Args)
	}
	shard, ok := flagValue(c.Args, "--shard")
	if want := "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(n); !ok || shard != want {
		t.Errorf("--shard %q; want %q (the completion index of N = completions = %d)", shard, want, n)
	}
	i := slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == "JOB_COMPLETION_INDEX" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil ||
		c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("JOB_COMPLETION_INDEX is not taken from the pod's job-completion-index annotation")
	}
	checkVars(t, "shard Job", c)

	pod := spec.Template.Spec
	out, ok := flagValue(c.Args, "-o", "--out")
	if !ok || !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Errorf("-o %q; want a directory per shard, named by $(JOB_COMPLETION_INDEX)", out)
	}
	if v, _, ok := mountOf(c, pod.Volumes, out); !ok || v.PersistentVolumeClaim == nil {
		t.Errorf("-o %q is not on a persistent volume claim", out)
	}
	if !slices.Contains(c.Args, "--overwrite") {
		t.Errorf("args %q lack --overwrite: a retried shard pod would find its directory taken", c.Args)
	}
	exp, ok := flagValue(c.Args, "-c", "--config")
	if !ok {
		t.Fatalf("args %q name no experiment (-c)", c.Args)
	}
	v, rel, ok := mountOf(c, pod.Volumes, exp)
	if !ok || v.ConfigMap == nil {
		t.Fatalf("-c %q is not in a mounted ConfigMap", exp)
	}
	_, kusts := loadAll(t)
	file := generatedFile(t, kusts, v.ConfigMap.Name, rel)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eval.ParseExperiment(raw, file); err != nil {
		t.Errorf("the shards' experiment: %v", err)
	}

	// Every shard reads one start time, --start-at $(START_AT), from a
	// ConfigMap key the kustomization generates.
	if at, ok := flagValue(c.Args, "--start-at"); !ok || at != "$(START_AT)" {
		t.Errorf("--start-at %q; want $(START_AT), one start for every shard", at)
	}
	i = slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == "START_AT" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ConfigMapKeyRef == nil {
		t.Fatal("START_AT is not taken from a ConfigMap")
	}
	ref := c.Env[i].ValueFrom.ConfigMapKeyRef
	if !slices.ContainsFunc(generatedLiterals(kusts, ref.Name), func(l string) bool { return strings.HasPrefix(l, ref.Key+"=") }) {
		t.Errorf("START_AT comes from key %s of ConfigMap %s, which no kustomization generates", ref.Key, ref.Name)
	}
}

// generatedLiterals are the literals of the ConfigMap generators called gen.
func generatedLiterals(kusts map[string]kustomization, gen string) []string {
	var out []string
	for _, k := range kusts {
		for _, g := range k.ConfigMapGenerator {
			if g.Name == gen {
				out = append(out, g.Literals...)
			}
		}
	}
	return out
}

// generatedFile is the file a kustomization's ConfigMap or Secret
// generator makes into key name of the object called gen.
func generatedFile(t *testing.T, kusts map[string]kustomization, gen, name string) string {
	t.Helper()
	for dir, k := range kusts {
		for _, g := range append(k.ConfigMapGenerator, k.SecretGenerator...) {
			if g.Name != gen {
				continue
			}
			for _, f := range g.Files {
				if filepath.Base(f) == name {
					return filepath.Join(dir, f)
				}
			}
		}
	}
	t.Fatalf("no generator makes %s in %s", name, gen)
	return ""
}

// The merge Job reads each shard's directory exactly once, on the volume
// the shards wrote, under the same run name.
func TestMergeJob(t *testing.T) {
	objs, _ := loadAll(t)
	shards, n, sc := shardJob(t, objs)
	out, _ := flagValue(sc.Args, "-o", "--out")
	var want []string
	for i := range n {
		want = append(want, strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(i)))
	}
	claim := func(pod podSpec, c container, path string) string {
		v, _, ok := mountOf(c, pod.Volumes, path)
		if !ok || v.PersistentVolumeClaim == nil {
			t.Fatalf("%s: %s is not on a persistent volume claim", c.Name, path)
		}
		return v.PersistentVolumeClaim.ClaimName
	}
	runEnv := func(c container) *keyRef {
		i := slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == "RUN_NAME" })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ConfigMapKeyRef == nil {
			t.Fatalf("%s: RUN_NAME is not taken from a ConfigMap", c.Name)
		}
		return c.Env[i].ValueFrom.ConfigMapKeyRef
	}
	shardClaim := claim(shards.Template.Spec, sc, out)
	merge := decodeSpec[jobSpec](t, find(t, objs, "Job", "crab-merge"))
	pod := merge.Template.Spec
	commands := map[string]bool{}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		if len(c.Args) == 0 {
			t.Fatalf("merge container %s has no arguments", c.Name)
		}
		commands[c.Args[0]] = true
		checkVars(t, "merge container "+c.Name, c)
		var dirs []string
		for _, a := range c.Args {
			if strings.HasPrefix(a, strings.SplitN(out, "$(JOB_COMPLETION_INDEX)", 2)[0]) {
				dirs = append(dirs, a)
			}
		}
		if !slices.Equal(dirs, want) {
			t.Errorf("merge container %s reads %q; want every shard once: %q", c.Name, dirs, want)
		}
		if got := claim(pod, c, want[0]); got != shardClaim {
			t.Errorf("merge container %s reads claim %s; the shards write %s", c.Name, got, shardClaim)
		}
		if got, want := *runEnv(c), *runEnv(sc); got != want {
			t.Errorf("merge container %s takes RUN_NAME from %+v; the shards from %+v", c.Name, got, want)
		}
	}
	if !commands["report"] {
		t.Errorf("merge Job runs %v; want crab report among them", commands)
	}
}

// crab serve runs replicated, shares Redis, reports ready on /healthz and
// is scraped on /metrics.
func TestServe(t *testing.T) {
	objs, kusts := loadAll(t)
	dep := decodeSpec[deploymentSpec](t, find(t, objs, "Deployment", "crab-serve"))
	if dep.Replicas == nil || *dep.Replicas < 2 {
		t.Errorf("replicas %v; want at least 2", dep.Replicas)
	}
	pod := dep.Template
	for k, v := range dep.Selector.MatchLabels {
		if pod.Metadata.Labels[k] != v {
			t.Errorf("the Deployment selects %s=%s; its pods are labelled %v", k, v, pod.Metadata.Labels)
		}
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers; want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("args %q; want crab serve", c.Args)
	}
	listen, _ := flagValue(c.Args, "--listen")
	_, lport, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("--listen %q: %v", listen, err)
	}
	if len(c.Ports) != 1 || strconv.Itoa(c.Ports[0].ContainerPort) != lport {
		t.Fatalf("container ports %+v; want one, the --listen port %s", c.Ports, lport)
	}
	cport := c.Ports[0]
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" ||
		(p.HTTPGet.Port != cport.Name && p.HTTPGet.Port != lport) {
		t.Errorf("readiness probe %s; want GET /healthz on port %s (%s)", describe(p), cport.Name, lport)
	}
	a := pod.Metadata.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != lport || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v; want prometheus.io scrape true, port %s, path /metrics", a, lport)
	}

	svc := find(t, objs, "Service", "crab-serve")
	ss := decodeSpec[serviceSpec](t, svc)
	for k, v := range ss.Selector {
		if pod.Metadata.Labels[k] != v {
			t.Errorf("Service crab-serve selects %s=%s; the pods are labelled %v", k, v, pod.Metadata.Labels)
		}
	}
	sm := decodeSpec[serviceMonitorSpec](t, find(t, objs, "ServiceMonitor", "crab-serve"))
	for k, v := range sm.Selector.MatchLabels {
		if svc.Metadata.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s; Service crab-serve is labelled %v", k, v, svc.Metadata.Labels)
		}
	}
	if len(sm.Endpoints) != 1 || sm.Endpoints[0].Path != "/metrics" ||
		!slices.ContainsFunc(ss.Ports, func(p port) bool { return p.Name == sm.Endpoints[0].Port && p.TargetPort == cport.Name }) {
		t.Errorf("ServiceMonitor endpoints %+v; want /metrics on a named Service port that reaches %s", sm.Endpoints, cport.Name)
	}

	// The configuration, as the pod sees it: one projected directory.
	cfgPath, _ := flagValue(c.Args, "--config", "-c")
	v, rel, ok := mountOf(c, pod.Spec.Volumes, cfgPath)
	if !ok || v.Projected == nil {
		t.Fatalf("--config %q is not in a projected volume", cfgPath)
	}
	dir := t.TempDir()
	for _, src := range v.Projected.Sources {
		var gen string
		switch {
		case src.ConfigMap != nil:
			gen = src.ConfigMap.Name
		case src.Secret != nil:
			gen = src.Secret.Name
		}
		for _, k := range kusts {
			for _, g := range append(k.ConfigMapGenerator, k.SecretGenerator...) {
				if g.Name != gen {
					continue
				}
				for _, f := range g.Files {
					raw, err := os.ReadFile(generatedFile(t, kusts, gen, filepath.Base(f)))
					if err != nil {
						t.Fatal(err)
					}
					os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o644)
				}
			}
		}
	}
	// The environment, as the pod sees it: variables from generated
	// Secrets' literals.
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		found := false
		for _, k := range kusts {
			for _, g := range k.SecretGenerator {
				for _, l := range g.Literals {
					if v, ok := strings.CutPrefix(l, ref.Key+"="); ok && g.Name == ref.Name {
						t.Setenv(e.Name, v)
						found = true
					}
				}
			}
		}
		if !found {
			t.Errorf("env %s: no generated Secret %s with key %s", e.Name, ref.Name, ref.Key)
		}
	}
	setup, err := serve.Load(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("crab serve's configuration as mounted: %v", err)
	}
	cs := setup.Config.Cache
	if cs == nil || cs.Store != "redis" {
		t.Fatalf("cache %+v; want the redis store, shared by the replicas", cs)
	}
	checkService(t, objs, "redis_addr", cs.RedisAddr)
	for _, m := range setup.Config.Models {
		u, err := url.Parse(m.BaseURL)
		if err != nil {
			t.Fatalf("model %s: base_url %q: %v", m.Name, m.BaseURL, err)
		}
		checkService(t, objs, "model "+m.Name, u.Host)
	}
	schema, _ := os.ReadFile(filepath.Join(dir, setup.Config.Contract.File))
	fixture, err := os.ReadFile("../../fixtures/triage.schema.json")
	if err != nil || !bytes.Equal(schema, fixture) {
		t.Errorf("the mounted contract differs from fixtures/triage.schema.json (%v): copy it again", err)
	}
}

// describe shows a readiness probe in a failure message.
func describe(p *probe) string {
	if p == nil || p.HTTPGet == nil {
		return "none (or not an HTTP GET)"
	}
	return fmt.Sprintf("GET %s on port %s", p.HTTPGet.Path, p.HTTPGet.Port)
}

// checkService checks that addr (host:port) is a Service of the manifests
// with that port, whose selector matches some Deployment's pods.
func checkService(t *testing.T, objs []object, what, addr string) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s %q: %v", what, addr, err)
		return
	}
	svc := decodeSpec[serviceSpec](t, find(t, objs, "Service", host))
	if !slices.ContainsFunc(svc.Ports, func(x port) bool { return strconv.Itoa(x.Port) == p }) {
		t.Errorf("%s %s: Service %s has ports %+v", what, addr, host, svc.Ports)
	}
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		labels := decodeSpec[deploymentSpec](t, o).Template.Metadata.Labels
		match := len(svc.Selector) > 0
		for k, v := range svc.Selector {
			match = match && labels[k] == v
		}
		if match {
			return
		}
	}
	t.Errorf("%s %s: Service %s selects no Deployment's pods", what, addr, host)
}

// Every crab container runs the image the Dockerfile builds, whose
// entrypoint is crab itself, so arguments start with the command.
func TestImage(t *testing.T) {
	objs, _ := loadAll(t)
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(df, []byte(`ENTRYPOINT ["/crab"]`)) {
		t.Errorf(`Dockerfile: no ENTRYPOINT ["/crab"]`)
	}
	images := map[string]bool{}
	for _, o := range objs {
		var pod podSpec
		switch o.Kind {
		case "Job":
			pod = decodeSpec[jobSpec](t, o).Template.Spec
		case "Deployment":
			pod = decodeSpec[deploymentSpec](t, o).Template.Spec
		default:
			continue
		}
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			if strings.HasPrefix(c.Image, "redis:") {
				continue
			}
			images[c.Image] = true
			if len(c.Command) != 0 {
				t.Errorf("%s %s: container %s overrides the entrypoint", o.Kind, o.Metadata.Name, c.Name)
			}
		}
	}
	if len(images) != 1 {
		t.Errorf("crab containers use images %v; want one", images)
	}
}
