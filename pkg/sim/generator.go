package sim

import (
	"math"
	"sort"
	"time"
)

// generator is a field value as a pure function of elapsed time. Generators
// are built once at load; at must not allocate.
type generator interface {
	at(t time.Duration) float64
	// salted returns the generator with its random streams re-keyed for one
	// entity, so that repeated GPUs do not move in lockstep.
	salted(salt uint64) generator
	// monotonic reports whether the value never decreases with time.
	monotonic() bool
}

// constant is a fixed value.
type constant struct{ v float64 }

func (g constant) at(time.Duration) float64 { return g.v }
func (g constant) salted(uint64) generator  { return g }
func (g constant) monotonic() bool          { return true }

// ramp goes linearly from `from` to `to` during over, starting at start;
// it holds `to` afterwards, or starts again when repeat is set.
type ramp struct {
	from, to    float64
	start, over time.Duration
	repeat      bool
}

func (g *ramp) at(t time.Duration) float64 {
	if t < g.start {
		return g.from
	}
	u := t - g.start
	if g.repeat {
		u %= g.over
	}
	if u >= g.over {
		return g.to
	}
	return g.from + (g.to-g.from)*float64(u)/float64(g.over)
}

func (g *ramp) salted(uint64) generator { return g }
func (g *ramp) monotonic() bool         { return !g.repeat && g.to >= g.from }

// sine oscillates around mean; phase shifts time.
type sine struct {
	mean, amplitude float64
	period, phase   time.Duration
}

func (g *sine) at(t time.Duration) float64 {
	x := (t + g.phase) % g.period // in durations, so long runs keep precision
	if x < 0 {
		x += g.period
	}
	return g.mean + g.amplitude*math.Sin(2*math.Pi*float64(x)/float64(g.period))
}

func (g *sine) salted(uint64) generator { return g }
func (g *sine) monotonic() bool         { return g.amplitude == 0 }

// step holds values[i] from times[i] on; before times[0] it holds values[0].
// With repeat > 0 the steps recur with that period.
type step struct {
	times  []time.Duration
	values []float64
	repeat time.Duration
}

func (g *step) at(t time.Duration) float64 {
	if g.repeat > 0 {
		t %= g.repeat
		if t < 0 {
			t += g.repeat
		}
	}
	i := sort.Search(len(g.times), func(i int) bool { return g.times[i] > t }) - 1
	return g.values[max(i, 0)]
}

func (g *step) salted(uint64) generator { return g }

func (g *step) monotonic() bool {
	if g.repeat > 0 {
		return false
	}
	for i := 1; i < len(g.values); i++ {
		if g.values[i] < g.values[i-1] {
			return false
		}
	}
	return true
}

// noise is approximately Gaussian: one draw per time bucket, a hash of
// seed and bucket. The draw sums four uniform variates (Irwin-Hall), which is
// cheap and bounded to ±3.46 standard deviations: no absurd outliers.
type noise struct {
	mean, stddev float64
	seed         uint64
	bucket       time.Duration
}

func (g *noise) at(t time.Duration) float64 {
	b := t / g.bucket
	if t < 0 && t%g.bucket != 0 {
		b-- // floor, so that bucket 0 is [0, bucket)
	}
	h := mix64(g.seed ^ mix64(uint64(b)))
	u := float64(h&0xffff) + float64(h>>16&0xffff) + float64(h>>32&0xffff) + float64(h>>48)
	// Four uniforms on [0, 1) sum to mean 2, variance 1/3.
	const sqrt3 = 1.7320508075688772
	z := (u/65536 - 2) * sqrt3
	return g.mean + g.stddev*z
}

func (g *noise) salted(salt uint64) generator {
	c := *g
	c.seed = mix64(g.seed ^ mix64(salt^0x51a7))
	return &c
}

func (g *noise) monotonic() bool { return g.stddev == 0 }

// counter grows by rate per second from start.
type counter struct{ start, rate float64 }

func (g *counter) at(t time.Duration) float64 { return g.start + g.rate*t.Seconds() }
func (g *counter) salted(uint64) generator    { return g }
func (g *counter) monotonic() bool            { return g.rate >= 0 }

// sum adds its parts.
type sum struct{ parts []generator }

func (g *sum) at(t time.Duration) float64 {
	v := 0.0
	for _, p := range g.parts {
		v += p.at(t)
	}
	return v
}

func (g *sum) salted(salt uint64) generator {
	c := &sum{parts: make([]generator, len(g.parts))}
	for i, p := range g.parts {
		// Each part gets its own stream, so two noises in one sum differ.
		c.parts[i] = p.salted(mix64(salt + uint64(i)))
	}
	return c
}

func (g *sum) monotonic() bool {
	for _, p := range g.parts {
		if !p.monotonic() {
			return false
		}
	}
	return true
}

// clamp bounds a generator to [lo, hi].
type clamp struct {
	g      generator
	lo, hi float64
}

func (g *clamp) at(t time.Duration) float64 { return min(max(g.g.at(t), g.lo), g.hi) }
func (g *clamp) salted(s uint64) generator  { return &clamp{g: g.g.salted(s), lo: g.lo, hi: g.hi} }
func (g *clamp) monotonic() bool            { return g.g.monotonic() }

// freeMemory derives DCGM_FI_DEV_FB_FREE as total - used - reserved from the
// entity's other framebuffer fields.
type freeMemory struct {
	total, used, reserved *fieldSpec
}

func (g *freeMemory) at(t time.Duration) float64 {
	v := 0.0
	if n, ok := g.total.value(t).Number(); ok {
		v = n
	}
	if n, ok := g.used.value(t).Number(); ok {
		v -= n
	}
	if g.reserved != nil {
		if n, ok := g.reserved.value(t).Number(); ok {
			v -= n
		}
	}
	return max(v, 0)
}

func (g *freeMemory) salted(uint64) generator { return g }
func (g *freeMemory) monotonic() bool         { return false }

// mix64 is the SplitMix64 finaliser: a cheap, well-spread 64-bit hash.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
