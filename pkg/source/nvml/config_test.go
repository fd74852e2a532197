package nvml

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
	if c.CallTimeout != DefaultCallTimeout || c.BackoffMin != DefaultBackoffMin || c.BackoffMax != DefaultBackoffMax {
		t.Errorf("defaults = %+v", c)
	}
}

func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative timeout", Config{CallTimeout: -time.Second}, "negative call timeout"},
		{"backoff inverted", Config{BackoffMin: time.Minute, BackoffMax: time.Second}, "maximum backoff 1s is below the minimum 1m0s"},
		{"negative index", Config{GPUs: []int{0, -1}}, "negative GPU index -1"},
		{"index twice", Config{GPUs: []int{2, 2}}, "GPU index 2 selected twice"},
		{"negative fabric interval", Config{FabricInterval: -time.Second}, "negative fabric interval -1s"},
	}
	for _, tc := range cases {
		if _, err := tc.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigCopiesSelection(t *testing.T) {
	t.Parallel()
	gpus := []int{1, 2}
	c, err := Config{GPUs: gpus}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	gpus[0] = 7
	if c.GPUs[0] != 1 {
		t.Error("Config shares the caller's GPU slice")
	}
}

func TestMIGProfile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		devName  string
		slices   uint32
		memMiB   uint64
		expected string
	}{
		{"from the name", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", 3, 19968, "3g.20gb"},
		{"compute instance prefix dropped", "NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb", 3, 19968, "3g.20gb"},
		{"media extension kept", "NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", 1, 9856, "1g.10gb+me"},
		{"bare profile", "2g.10gb", 2, 9856, "2g.10gb"},
		{"from attributes", "NVIDIA A100-SXM4-40GB", 1, 4864, "1g.5gb"},
		{"attributes round up", "", 7, 81408, "7g.80gb"},
		{"nothing known", "", 0, 0, ""},
		{"not UTF-8", "NVIDIA A100\xff MIG 3g.20gb\xfe\xfd", 3, 19968, "3g.20gb\uFFFD"},
	}
	for _, tc := range cases {
		if got := migProfile(tc.devName, tc.slices, tc.memMiB); got != tc.expected {
			t.Errorf("%s: migProfile(%q, %d, %d) = %q, want %q", tc.name, tc.devName, tc.slices, tc.memMiB, got, tc.expected)
		}
	}
}

func TestMIGProfileNameAtStart(t *testing.T) {
	t.Parallel()
	// A name that is only "MIG <profile>" (no parent model before it)
	// still gives the profile, not the attributes' (none here).
	if got := migProfile("MIG 1g.10gb", 0, 0); got != "1g.10gb" {
		t.Errorf("migProfile(%q) = %q, want 1g.10gb", "MIG 1g.10gb", got)
	}
}

func TestIsDigits(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"0123456789": true, "7": true, "": false, "/": false, ":": false, "1a": false, "٣": false} {
		if got := isDigits(s); got != want {
			t.Errorf("isDigits(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestMIGDeviceProfile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, devName, giProfile string
		ciSlices, giSlices       uint32
		want                     string
	}{
		// The name wins over the slice counts, which here would say the
		// compute instance fills its GPU instance.
		{"compute instance from the name", "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", "3g.40gb", 3, 3, "1c.3g.40gb"},
		{"name only", "MIG 1c.3g.40gb", "3g.40gb", 3, 3, "1c.3g.40gb"},
		{"whole GPU instance from the name", "NVIDIA A100-SXM4-40GB MIG 3g.20gb", "3g.20gb", 1, 3, "3g.20gb"},
		{"no profile in the name", "NVIDIA A100-SXM4-40GB", "3g.20gb", 1, 3, "1c.3g.20gb"},
		{"another instance's profile in the name", "NVIDIA A100-SXM4-40GB MIG 2g.10gb", "3g.20gb", 1, 3, "1c.3g.20gb"},
		{"unknown GPU instance profile", "NVIDIA A100-SXM4-40GB MIG 1c.", "", 1, 3, ""},
	}
	for _, tc := range cases {
		if got := migDeviceProfile(tc.devName, tc.giProfile, tc.ciSlices, tc.giSlices); got != tc.want {
			t.Errorf("%s: migDeviceProfile(%q, %q, %d, %d) = %q, want %q", tc.name, tc.devName, tc.giProfile, tc.ciSlices, tc.giSlices, got, tc.want)
		}
	}
}
