// Package deploy tests what the project ships for deployment — the Helm
// chart, the kustomize manifests, the systemd unit and the Dockerfile —
// without a cluster, a container engine or a GPU: charts are rendered with
// the real helm binary, manifests built with the real kustomize, every
// object is strictly decoded into its Kubernetes Go type (kubevalidate),
// the unit is checked by systemd-analyze, and every exporter flag they use
// is checked against the built binary.
//
// The tools come from tests/tools (`make tools`), found on PATH or in
// tests/tools/bin. A missing tool skips its test, or fails it when the CI
// environment variable is set.
package deploy
