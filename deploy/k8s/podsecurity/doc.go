// Package podsecurity holds a test that admits every pod of crab's
// Kubernetes manifests (deploy/k8s) as the Pod Security admission
// controller would at the "restricted" level, with the controller's own
// policy code (k8s.io/pod-security-admission), after decoding each
// manifest strictly into the k8s.io/api types.
//
// It is a module of its own so that crab's module does not carry
// Kubernetes' dependencies; run it from this directory:
//
//	go test ./...
package podsecurity
