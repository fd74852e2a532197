package cgocall

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func TestLinkBacksOffAndStartsOver(t *testing.T) {
	t.Parallel()
	l := NewLink("lib", Retry{BackoffMin: time.Second, BackoffMax: 5 * time.Second})
	now := time.Unix(0, 0)
	if err := l.Wait(now); err != nil {
		t.Fatalf("a new link must be tried at once: %v", err)
	}
	boom := errors.New("boom")
	var got []time.Duration
	for i := range 5 {
		d, first := l.Attempted(now, boom)
		if first != (i == 0) {
			t.Errorf("attempt %d: first = %v", i, first)
		}
		got = append(got, d)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays = %v, want %v", got, want)
		}
	}
	err := l.Wait(now.Add(time.Second))
	if !errors.Is(err, source.ErrUnavailable) || !errors.Is(err, boom) || !strings.Contains(err.Error(), "lib retry in 4s") {
		t.Errorf("Wait during the backoff = %v", err)
	}
	if err := l.Wait(now.Add(5 * time.Second)); err != nil {
		t.Errorf("Wait after the backoff = %v", err)
	}
	if _, first := l.Attempted(now, nil); first || !l.Up() {
		t.Fatal("success must bring the link up")
	}
	if d, was := l.Lost(now, boom); !was || d != time.Second {
		t.Errorf("Lost after a success = %s, %v; want 1s (backoff starts over), true", d, was)
	}
	if _, was := l.Lost(now, boom); was {
		t.Error("Lost on a down link reported a change")
	}
}

func TestRetryDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	r, err := Retry{}.WithDefaults("lib")
	if err != nil || r.CallTimeout != DefaultCallTimeout || r.BackoffMin != DefaultBackoffMin || r.BackoffMax != DefaultBackoffMax {
		t.Errorf("defaults = %+v, %v", r, err)
	}
	cases := []struct {
		r    Retry
		want string
	}{
		{Retry{CallTimeout: -time.Second}, "lib: negative call timeout -1s"},
		{Retry{BackoffMin: -time.Second}, "lib: negative minimum backoff -1s"},
		{Retry{BackoffMin: time.Minute, BackoffMax: time.Second}, "lib: maximum backoff 1s is below the minimum 1m0s"},
	}
	for _, tc := range cases {
		if _, err := tc.r.WithDefaults("lib"); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: error = %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestSelection(t *testing.T) {
	t.Parallel()
	in := []int{2, 0}
	out, err := Selection("lib", "GPU id", in)
	if err != nil || len(out) != 2 || &out[0] == &in[0] {
		t.Errorf("Selection = %v, %v; want a copy", out, err)
	}
	if _, err := Selection("lib", "GPU id", []int{1, -1}); err == nil || err.Error() != "lib: negative GPU id -1" {
		t.Errorf("negative: %v", err)
	}
	if _, err := Selection("lib", "GPU index", []int{2, 2}); err == nil || err.Error() != "lib: GPU index 2 selected twice" {
		t.Errorf("twice: %v", err)
	}
}
