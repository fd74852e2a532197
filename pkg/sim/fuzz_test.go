package sim

import (
	"context"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/etc"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// FuzzParse checks that no input makes Parse, or playing what it accepts,
// panic or hang.
func FuzzParse(f *testing.F) {
	for _, name := range Builtins() {
		data, err := etc.FS.ReadFile("sim/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		oneGPU,
		oneGPU + "    fields: {DCGM_FI_DEV_GPU_UTIL: {sum: [{noise: {stddev: 1}}, {step: {repeat: 1m, steps: [{at: 0s, value: 1}]}}], min: 0, integer: true}}\n",
		oneGPU + "    mig: [{profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}]\npods: [{namespace: a, name: b, containers: [{name: c, devices: [{resource: r, replicas: [{gpu: 0, gpu_instance: 7, replica: 1}]}]}]}]\n",
		oneGPU + "faults: [{at: 1m, gpu: 0, lost: true, duration: 1s}, {at: 0s, outage: true, duration: 1s}, {at: 1s, gpu: 0, xid: 79}]\n",
		"gpus: &g [*g]\n",
		"a: &a {b: *a}\ngpus: []\n",
		"gpus:\n  - <<: [{model: a}, {memory_mib: 1}]\n",
	} {
		f.Add([]byte(seed))
	}
	all := fields.MustNew().All()
	f.Fuzz(func(t *testing.T, data []byte) {
		scn, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		start := time.Unix(0, 0)
		now := start
		src := New(scn, WithStart(start), WithClock(func() time.Time { return now }))
		ctx := context.Background()
		if err := src.Watch(ctx, all); err != nil {
			return
		}
		for _, at := range []time.Duration{0, time.Second, 61 * time.Second, 10 * time.Minute, 1000 * time.Hour} {
			now = start.Add(at)
			_, _ = src.Inventory(ctx)
			_, _ = src.Read(ctx)
			_ = scn.PodsAt(at)
		}
	})
}
