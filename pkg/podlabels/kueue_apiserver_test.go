package podlabels

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

func TestMain(m *testing.M) { os.Exit(kubeapi.Main(m)) }

// lqs is Kueue's LocalQueue resource in version.
func lqs(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: version, Resource: "localqueues"}
}

// TestLocalQueueVersionsAPIServer reads a LocalQueue's ClusterQueue from a
// real kube-apiserver whose Kueue CRD serves v1beta1 only (Kueue before
// v0.15), then, after an upgrade that stops serving v1beta1 (the removal
// Kueue's CHANGELOG-0.16.md plans), v1beta2 only: the same owners cache
// follows, and the access probe says allowed both times.
func TestLocalQueueVersionsAPIServer(t *testing.T) {
	srv := kubeapi.Shared(t)
	admin := srv.Admin()
	ctx := context.Background()
	const ns = "kueue-versions"
	srv.CreateNamespace(t, ns)
	srv.Create(t, kubeapi.CRDs, kubeapi.LocalQueueCRD(kubeapi.Version{Name: "v1beta1", Served: true}))
	srv.WaitServed(t, lqs("v1beta1"), true)
	srv.Create(t, lqs("v1beta1"), map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
		"metadata": map[string]any{"name": "team-a", "namespace": ns}, "spec": map[string]any{"clusterQueue": "pool-a"}})

	g, err := newRESTGetter(admin)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var version atomic.Uint64
	o := newOwners(g, slog.New(slog.DiscardHandler), m, &version)
	// resolve asks for team-a afresh and returns what the server answered.
	resolve := func() (ownerObject, lookupState) {
		t.Helper()
		o.mu.Lock()
		delete(o.cache, ownerKey{&localQueues, ns, "team-a"})
		o.mu.Unlock()
		o.lookup(&localQueues, ns, "team-a")
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		o.fetch(fctx, <-o.queue)
		return o.lookup(&localQueues, ns, "team-a")
	}
	probe := func() Access {
		t.Helper()
		access, err := ProbeWorkloadAccess(ctx, admin, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range access {
			if a.Resource == "localqueues" {
				return a
			}
		}
		t.Fatal("the probe left out localqueues")
		return Access{}
	}

	if lq, state := resolve(); state != stateFound || lq.clusterQueue != "pool-a" {
		t.Errorf("v1beta1 only: LocalQueue %+v, state %d; want pool-a, found", lq, state)
	}
	if a := probe(); !a.Allowed {
		t.Errorf("v1beta1 only: probe %+v, want allowed", a)
	}

	// Upgrade: v1beta2 stored and served, v1beta1 kept in the CRD (its
	// objects are stored in it) but no longer served.
	crd, err := kubeapi.Dynamic(t, admin).Resource(kubeapi.CRDs).Get(ctx, "localqueues.kueue.x-k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := kubeapi.LocalQueueCRD(kubeapi.Version{Name: "v1beta2", Served: true}, kubeapi.Version{Name: "v1beta1", Served: false})
	crd.Object["spec"] = next["spec"]
	if _, err := kubeapi.Dynamic(t, admin).Resource(kubeapi.CRDs).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	srv.WaitServed(t, lqs("v1beta2"), true)
	srv.WaitServed(t, lqs("v1beta1"), false)
	if lq, state := resolve(); state != stateFound || lq.clusterQueue != "pool-a" {
		t.Errorf("v1beta2 only: LocalQueue %+v, state %d; want pool-a, found", lq, state)
	}
	if a := probe(); !a.Allowed {
		t.Errorf("v1beta2 only: probe %+v, want allowed", a)
	}
	// A LocalQueue that does not exist is gone, not unserved.
	o.lookup(&localQueues, ns, "missing")
	o.fetch(ctx, <-o.queue)
	if _, state := o.lookup(&localQueues, ns, "missing"); state != stateNotFound {
		t.Errorf("missing LocalQueue: state %d, want not found (%d)", state, stateNotFound)
	}
}

// TestJobSetQueueAPIServer resolves a JobSet worker's queue from a real
// kube-apiserver serving JobSet's CRD: the pod names its JobSet only, the
// JobSet carries the queue label as Kueue's JobSet guide has it. (The
// LocalQueue is missing whatever Kueue CRD the server serves, so there is
// no ClusterQueue: TestLocalQueueVersionsAPIServer reads those.)
func TestJobSetQueueAPIServer(t *testing.T) {
	srv := kubeapi.Shared(t)
	const ns = "kueue-jobset"
	srv.CreateNamespace(t, ns)
	jsr := schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}
	srv.Create(t, kubeapi.CRDs, kubeapi.JobSetCRD())
	srv.WaitServed(t, jsr, true)
	srv.Create(t, jsr, map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "pretrain", "namespace": ns, "labels": map[string]any{queueLabel: "team-a"}},
		"spec":     map[string]any{"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": int64(1)}}}})
	g, err := newRESTGetter(srv.Admin())
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var version atomic.Uint64
	o := newOwners(g, slog.New(slog.DiscardHandler), m, &version)
	seed := workloadSeed{enabled: true, jobSet: "pretrain", owner: Owner{Group: "batch", Kind: KindJob, Name: "pretrain-workers-0"}, controlled: true}
	var w Workload
	ok := false
	for range 5 { // each round answers the owners the last one asked for
		if w, ok = resolveWorkload(ns, "pretrain-workers-0-0", seed, o.lookup); ok {
			break
		}
		for len(o.queue) > 0 {
			o.fetch(context.Background(), <-o.queue)
		}
	}
	if want := (Workload{Kind: KindJobSet, Name: "pretrain", Queue: "team-a"}); !ok || w != want {
		t.Errorf("workload %+v (resolved: %v), want %+v", w, ok, want)
	}
}
