package source

import (
	"strings"
	"testing"
	"time"
)

func TestRefreshInterval(t *testing.T) {
	t.Parallel()
	const collect = 10 * time.Second
	cases := []struct {
		v    time.Duration
		want time.Duration
		err  string
	}{
		{0, collect, ""},
		{MinInterval, MinInterval, ""},
		{time.Minute, time.Minute, ""},
		{-time.Second, 0, "--x.refresh-interval must not be negative, got -1s"},
		{MinInterval - 1, 0, "--x.refresh-interval must be at least 100ms, got 99.999999ms"},
	}
	for _, tc := range cases {
		got, err := RefreshInterval("--x.refresh-interval", tc.v, collect)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("RefreshInterval(%s): %v, want an error containing %q", tc.v, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("RefreshInterval(%s) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
	// A collect interval below the minimum is refused too: 0 takes it.
	if _, err := RefreshInterval("--x.refresh-interval", 0, time.Millisecond); err == nil {
		t.Error("RefreshInterval(0) with a 1ms collect interval: no error")
	}
}
