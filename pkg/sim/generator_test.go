package sim

import (
	"math"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// specAt parses one field spec for field and evaluates it at the times.
func specAt(t *testing.T, field, spec string, times ...time.Duration) []source.Value {
	t.Helper()
	cat := fields.MustNew()
	f, ok := cat.Lookup(field)
	if !ok {
		t.Fatalf("no field %s", field)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(spec), &n); err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	d := &decoder{file: "spec.yaml", catalog: cat}
	tmpl, err := d.template(n.Content[0], "spec", f)
	if err != nil {
		t.Fatalf("spec %q: %v", spec, err)
	}
	fs := tmpl.instantiate(0)
	out := make([]source.Value, len(times))
	for i, at := range times {
		out[i] = fs.value(at)
	}
	return out
}

func TestGenerators(t *testing.T) {
	t.Parallel()
	const (
		util  = "DCGM_FI_DEV_GPU_UTIL"
		power = "DCGM_FI_DEV_POWER_USAGE"
		sbe   = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
	)
	s := time.Second
	i, f := source.IntValue, source.FloatValue
	cases := []struct {
		name  string
		field string
		spec  string
		times []time.Duration
		want  []source.Value
	}{
		{"number is a constant", power, `1980`, []time.Duration{0, time.Hour}, []source.Value{f(1980), f(1980)}},
		{"constant", power, `{constant: 71.5}`, []time.Duration{0, 10 * s}, []source.Value{f(71.5), f(71.5)}},
		{"integer constant", util, `{constant: 42, integer: true}`, []time.Duration{0}, []source.Value{i(42)}},
		{"integer rounds to nearest", util, `{constant: 2.5, integer: true}`, []time.Duration{0}, []source.Value{i(3)}},
		{"ramp then hold", util, `{ramp: {from: 0, to: 100, over: 100s}}`,
			[]time.Duration{0, 25 * s, 100 * s, 200 * s}, []source.Value{f(0), f(25), f(100), f(100)}},
		{"ramp down with delay", util, `{ramp: {from: 100, to: 0, over: 50s, at: 10s}}`,
			[]time.Duration{0, 10 * s, 35 * s, 60 * s}, []source.Value{f(100), f(100), f(50), f(0)}},
		{"ramp repeats as a sawtooth", util, `{ramp: {from: 0, to: 10, over: 10s, repeat: true}}`,
			[]time.Duration{5 * s, 10 * s, 17 * s}, []source.Value{f(5), f(0), f(7)}},
		{"sine", power, `{sine: {mean: 50, amplitude: 10, period: 4m}}`,
			[]time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute}, []source.Value{f(50), f(60), f(50), f(40), f(60)}},
		{"sine with phase", power, `{sine: {mean: 50, amplitude: 10, period: 4m, phase: 1m}}`,
			[]time.Duration{0, time.Minute}, []source.Value{f(60), f(50)}},
		{"sine with negative phase", power, `{sine: {mean: 50, amplitude: 10, period: 4m, phase: -1m}}`,
			[]time.Duration{0}, []source.Value{f(40)}},
		{"step list", util, `{step: [{at: 0s, value: 1}, {at: 30s, value: 2}, {at: 1m, value: 3}], integer: true}`,
			[]time.Duration{0, 29 * s, 30 * s, 90 * s}, []source.Value{i(1), i(1), i(2), i(3)}},
		{"step holds its first value before it", util, `{step: [{at: 10s, value: 7}, {at: 20s, value: 8}]}`,
			[]time.Duration{0, 15 * s, 25 * s}, []source.Value{f(7), f(7), f(8)}},
		{"step repeats", util, `{step: {repeat: 1m, steps: [{at: 0s, value: 0}, {at: 30s, value: 32}]}}`,
			[]time.Duration{29 * s, 35 * s, 61 * s, 95 * s}, []source.Value{f(0), f(32), f(0), f(32)}},
		{"counter", sbe, `{counter: {start: 10, rate: 0.5}}`,
			[]time.Duration{0, 10 * s, time.Hour}, []source.Value{f(10), f(15), f(1810)}},
		{"integer counter floors", sbe, `{counter: {rate: 0.3}, integer: true}`,
			[]time.Duration{0, 5 * s, 10 * s}, []source.Value{i(0), i(1), i(3)}},
		{"max clamps", util, `{ramp: {from: 90, to: 130, over: 40s}, max: 100}`,
			[]time.Duration{0, 20 * s, 40 * s}, []source.Value{f(90), f(100), f(100)}},
		{"min clamps", util, `{sine: {mean: 0, amplitude: 10, period: 4m}, min: 0}`,
			[]time.Duration{time.Minute, 3 * time.Minute}, []source.Value{f(10), f(0)}},
		{"sum", power, `{sum: [100, {ramp: {from: 0, to: 10, over: 10s}}, {constant: 1, max: 0.5}]}`,
			[]time.Duration{0, 5 * s}, []source.Value{f(100.5), f(105.5)}},
		{"zero jitter changes nothing", power, `{constant: 5, jitter: 0}`, []time.Duration{0, 7 * s}, []source.Value{f(5), f(5)}},
		{"bitmask fields are integers", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", `0x60`, []time.Duration{0}, []source.Value{i(96)}},
		{"blank", util, `{blank: true}`, []time.Duration{0}, []source.Value{{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := specAt(t, tc.field, tc.spec, tc.times...)
			for k := range got {
				g, w := got[k], tc.want[k]
				if g.Kind != w.Kind || g.Int != w.Int || math.Abs(g.Float-w.Float) > 1e-9 {
					t.Errorf("at %s: got %+v, want %+v", tc.times[k], g, w)
				}
			}
		})
	}
}

func TestNoiseIsDeterministic(t *testing.T) {
	t.Parallel()
	a := &noise{mean: 50, stddev: 5, seed: 1, bucket: time.Second}
	b := &noise{mean: 50, stddev: 5, seed: 1, bucket: time.Second}
	other := &noise{mean: 50, stddev: 5, seed: 2, bucket: time.Second}
	for _, at := range []time.Duration{0, 1500 * time.Millisecond, time.Hour} {
		if a.at(at) != b.at(at) {
			t.Errorf("at %s: same seed gave %g and %g", at, a.at(at), b.at(at))
		}
		if a.at(at) == other.at(at) {
			t.Errorf("at %s: seeds 1 and 2 both gave %g", at, a.at(at))
		}
	}
	if a.at(1100*time.Millisecond) != a.at(1900*time.Millisecond) {
		t.Error("values differ within one bucket")
	}
	if a.at(time.Second) == a.at(2*time.Second) {
		t.Error("values equal across buckets")
	}
	if a.at(0) == a.salted(1).at(0) || a.salted(1).at(0) != a.salted(1).at(0) {
		t.Error("salting must change the stream, deterministically")
	}
	wide := &noise{mean: 50, stddev: 5, seed: 7, bucket: 10 * time.Second}
	if wide.at(0) != wide.at(9*time.Second) {
		t.Error("bucket width not honoured")
	}
}

func TestNoiseIsGaussian(t *testing.T) {
	t.Parallel()
	g := &noise{mean: 50, stddev: 5, seed: 42, bucket: time.Second}
	const n = 20000
	var sum, sq float64
	for k := range n {
		v := g.at(time.Duration(k) * time.Second)
		sum += v
		sq += v * v
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-50) > 0.2 || math.Abs(sd-5) > 0.2 {
		t.Errorf("mean %g, stddev %g; want about 50 and 5", mean, sd)
	}
}

func TestMonotonic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		g    generator
		want bool
	}{
		{constant{3}, true},
		{&counter{rate: 1}, true},
		{&ramp{from: 0, to: 1, over: time.Second}, true},
		{&ramp{from: 1, to: 0, over: time.Second}, false},
		{&ramp{from: 0, to: 1, over: time.Second, repeat: true}, false},
		{&step{times: []time.Duration{0, 1}, values: []float64{0, 1}}, true},
		{&step{times: []time.Duration{0, 1}, values: []float64{1, 0}}, false},
		{&step{times: []time.Duration{0}, values: []float64{0}, repeat: time.Minute}, false},
		{&sine{amplitude: 1, period: time.Second}, false},
		{&noise{stddev: 1, bucket: time.Second}, false},
		{&sum{parts: []generator{constant{1}, &counter{rate: 1}}}, true},
		{&clamp{g: &counter{rate: 1}, lo: 0, hi: 5}, true},
	}
	for _, tc := range cases {
		if got := tc.g.monotonic(); got != tc.want {
			t.Errorf("%T%+v: monotonic %v, want %v", tc.g, tc.g, got, tc.want)
		}
	}
}
