package podsecurity_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// manifests is where the manifests live, relative to this directory.
const manifests = ".."

// restricted is the level every pod must pass: "restricted" at the
// policy version of this library.
var restricted = api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}

// doc is one YAML document of a manifest file.
type doc struct {
	where string
	raw   []byte
}

// documents returns every document of every manifest under dir, leaving
// out kustomizations and the crab configuration files they mount.
func documents(t *testing.T, dir string) []doc {
	t.Helper()
	var out []doc
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" ||
			filepath.Base(path) == "kustomization.yaml" || filepath.Base(filepath.Dir(path)) == "files" {
			return err
		}
		f, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(f)))
		for i := 1; ; i++ {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			out = append(out, doc{where: path + ": document " + strconv.Itoa(i), raw: raw})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no manifests under %s", dir)
	}
	return out
}

// podOf decodes a document strictly into its k8s.io/api type (an unknown
// or misspelt field fails) and returns its pod template, if it has one.
func podOf(t *testing.T, d doc) (*corev1.PodTemplateSpec, bool) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(d.raw, &tm); err != nil {
		t.Fatalf("%s: %v", d.where, err)
	}
	var obj any
	var tmpl func() *corev1.PodTemplateSpec
	switch tm.Kind {
	case "Deployment":
		o := &appsv1.Deployment{}
		obj, tmpl = o, func() *corev1.PodTemplateSpec { return &o.Spec.Template }
	case "Job":
		o := &batchv1.Job{}
		obj, tmpl = o, func() *corev1.PodTemplateSpec { return &o.Spec.Template }
	case "Service":
		obj = &corev1.Service{}
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "NetworkPolicy":
		obj = &networkingv1.NetworkPolicy{}
	default:
		// A custom resource (the ServiceMonitor): no type here to decode
		// it into, and no pod.
		return nil, false
	}
	if err := yaml.UnmarshalStrict(d.raw, obj); err != nil {
		t.Errorf("%s: %s: %v", d.where, tm.Kind, err)
		return nil, false
	}
	if tmpl == nil {
		return nil, false
	}
	return tmpl(), true
}

// failures returns the restricted checks a pod fails, as "reason: detail".
func failures(e policy.Evaluator, p *corev1.PodTemplateSpec) []string {
	var out []string
	for _, r := range e.EvaluatePod(restricted, &p.ObjectMeta, &p.Spec) {
		if !r.Allowed {
			out = append(out, r.ForbiddenReason+": "+r.ForbiddenDetail)
		}
	}
	return out
}

// Every pod template of the manifests passes Pod Security "restricted".
func TestRestricted(t *testing.T) {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range documents(t, manifests) {
		p, ok := podOf(t, d)
		if !ok {
			continue
		}
		n++
		for _, f := range failures(e, p) {
			t.Errorf("%s: pod %s: restricted: %s", d.where, p.Labels["app.kubernetes.io/name"], f)
		}
	}
	if n < 5 {
		t.Errorf("%d pod templates checked; want every Deployment and Job (5)", n)
	}
}

// The check bites: a pod as the manifests had it before (no seccomp
// profile) fails restricted.
func TestRestrictedRejectsNoSeccomp(t *testing.T) {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range documents(t, manifests) {
		p, ok := podOf(t, d)
		if !ok {
			continue
		}
		p = p.DeepCopy()
		p.Spec.SecurityContext.SeccompProfile = nil
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].SecurityContext.SeccompProfile = nil
		}
		if len(failures(e, p)) == 0 {
			t.Errorf("%s: without a seccomp profile the pod still passes restricted", d.where)
		}
		return
	}
	t.Fatal("no pod template")
}
