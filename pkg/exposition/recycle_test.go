package exposition_test

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// recycleInputs returns n inputs of the demo scenario whose pages differ:
// the first value of the sample is i in the i-th.
func recycleInputs(t *testing.T, n int) []exposition.Input {
	t.Helper()
	var ins []exposition.Input
	for i := range n {
		in, err := baselineInput(t.Context(), "demo")
		if err != nil {
			t.Fatal(err)
		}
		for col := range in.Sample.Fields {
			if _, ok := in.Sample.At(0, col).Number(); ok {
				in.Sample.Set(0, col, source.IntValue(int64(1000+i)))
				break
			}
		}
		ins = append(ins, in)
	}
	return ins
}

func TestRecycleBuffers(t *testing.T) {
	t.Parallel()
	ins := recycleInputs(t, 4)
	for _, tt := range []struct {
		name    string
		recycle bool
		hold    bool // acquire the first page across the renders
		reused  bool // the third page is written into the first one's buffers
	}{
		{"recycling, nobody holds the page", true, false, true},
		{"recycling, a scrape holds the page", true, true, false},
		{"no recycling", false, false, false},
	} {
		r := exposition.NewRenderer(exposition.Options{RecycleBuffers: tt.recycle})
		first := r.Render(ins[0])
		want := bytes.Clone(first.Text)
		if tt.hold && !first.Acquire() {
			t.Fatalf("%s: a fresh page cannot be acquired", tt.name)
		}
		r.Render(ins[1])
		third := r.Render(ins[2])
		if reused := &third.Text[:1][0] == &first.Text[:1][0]; reused != tt.reused {
			t.Errorf("%s: third page reuses the first one's buffer: %v, want %v", tt.name, reused, tt.reused)
		}
		if !tt.reused && !bytes.Equal(first.Text, want) {
			t.Errorf("%s: the first page changed under its holder", tt.name)
		}
		if tt.hold {
			first.Release()
		}
		if tt.recycle && !tt.hold && first.Acquire() {
			t.Errorf("%s: a recycled page can still be acquired", tt.name)
		}
	}
}

// TestRecycleBuffersConcurrentScrapes renders pages while scrapers load the
// current one, acquire it, check its bytes against what was rendered and
// release it: under -race, a buffer rewritten while a scraper reads it is
// reported, and a page that changed under its holder fails the comparison.
func TestRecycleBuffersConcurrentScrapes(t *testing.T) {
	t.Parallel()
	ins := recycleInputs(t, 3)
	r := exposition.NewRenderer(exposition.Options{RecycleBuffers: true})
	var (
		current  atomic.Pointer[exposition.Page]
		mu       sync.Mutex
		expected = map[*exposition.Page]string{}
		done     = make(chan struct{})
		wg       sync.WaitGroup
		scrapes  atomic.Int64
	)
	publish := func(i int) {
		p := r.Render(ins[i%len(ins)])
		mu.Lock()
		expected[p] = string(p.Text) + strconv.Itoa(p.Series)
		mu.Unlock()
		current.Store(p)
	}
	publish(0)
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				p := current.Load()
				for !p.Acquire() {
					p = current.Load()
				}
				mu.Lock()
				want := expected[p]
				mu.Unlock()
				if got := string(p.Text) + strconv.Itoa(p.Series); got != want {
					t.Error("a page changed while acquired")
				}
				p.Release()
				scrapes.Add(1)
			}
		})
	}
	for i := 1; i < 300; i++ {
		publish(i)
	}
	close(done)
	wg.Wait()
	if scrapes.Load() == 0 {
		t.Error("no scrape ran")
	}
}
