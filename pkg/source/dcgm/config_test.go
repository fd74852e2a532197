package dcgm

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeEmbedded || c.Interval != DefaultInterval || c.KeepAge != 45*time.Second ||
		c.CallTimeout != DefaultCallTimeout || c.BackoffMin != DefaultBackoffMin || c.BackoffMax != DefaultBackoffMax {
		t.Errorf("defaults = %+v", c)
	}
	c, err = Config{Interval: time.Second}.withDefaults()
	if err != nil || c.KeepAge != minKeepAge {
		t.Errorf("keep age for 1s interval = %s, %v; want %s", c.KeepAge, err, minKeepAge)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown mode", Config{Mode: "cloud"}, "unknown mode"},
		{"remote without address", Config{Mode: "remote"}, "needs a hostengine address"},
		{"negative interval", Config{Interval: -time.Second}, "negative interval"},
		{"keep age below interval", Config{Interval: time.Minute, KeepAge: time.Second}, "shorter than the interval"},
		{"backoff inverted", Config{BackoffMin: time.Minute, BackoffMax: time.Second}, "below the minimum"},
		{"negative gpu", Config{GPUs: []int{-1}}, "negative GPU id"},
		{"duplicate gpu", Config{GPUs: []int{1, 1}}, "selected twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRemoteAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		addr string
		unix bool
	}{
		{"localhost:5555", "localhost:5555", false},
		{"10.0.0.1", "10.0.0.1", false},
		{"tcp://dcgm.example:5555", "dcgm.example:5555", false},
		{"/run/nvidia-dcgm/dcgm.sock", "/run/nvidia-dcgm/dcgm.sock", true},
		{"./dcgm.sock", "./dcgm.sock", true},
		{"unix:///tmp/dcgm.sock", "/tmp/dcgm.sock", true},
		{" UNIX:///tmp/x ", "/tmp/x", true},
	}
	for _, tc := range cases {
		addr, unix := remoteAddress(tc.in)
		if addr != tc.addr || unix != tc.unix {
			t.Errorf("remoteAddress(%q) = %q, %v; want %q, %v", tc.in, addr, unix, tc.addr, tc.unix)
		}
	}
}

// DCGM's update frequency is in microseconds, but the source refuses
// anything below a millisecond: exactly 1ms is the least interval and
// fabric interval it takes, and a keep-age equal to the interval is the
// least it takes (no XID event is dropped between two reads).
func TestConfigBoundaries(t *testing.T) {
	t.Parallel()
	ok := []Config{
		{Interval: time.Millisecond},
		{Interval: time.Second, FabricInterval: time.Millisecond},
		{Interval: time.Minute, KeepAge: time.Minute},
	}
	for _, cfg := range ok {
		if _, err := cfg.withDefaults(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
	bad := map[string]Config{
		"interval 999µs is below DCGM's 1ms resolution":        {Interval: 999 * time.Microsecond},
		"fabric interval 999µs is below DCGM's 1ms resolution": {Interval: time.Second, FabricInterval: 999 * time.Microsecond},
		"negative keep age":        {KeepAge: -time.Second},
		"negative fabric interval": {FabricInterval: -time.Second},
	}
	for want, cfg := range bad {
		if _, err := cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want it to contain %q", cfg, err, want)
		}
	}
}
