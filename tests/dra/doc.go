// Package dra tests DRA attribution end to end against a real
// kube-apiserver (tests/kubeapi): the chart's ResourceSlice RBAC, rendered
// by the pinned helm and applied to the server, and the exporter on the
// simulator's dra scenario with the node's ResourceSlices in the server.
// Only tests live here.
package dra
