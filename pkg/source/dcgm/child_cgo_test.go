//go:build cgo && linux

package dcgm

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// childEnv tells a re-executed test binary which outcome TestChild expects.
const childEnv = "GPU_EXPORTER_DCGM_TEST_CHILD"

// TestChildProcesses runs this test binary again, without preloading the
// fake: once with LD_LIBRARY_PATH pointing at it, the way an end-to-end test
// starts the exporter, and once with no libdcgm.so.4 to be found.
func TestChildProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in a child")
	}
	lib := fakedcgm.Build(t)
	env := fakedcgm.NewEnv(t, node())
	cases := []struct {
		name string
		want string
		env  []string
	}{
		{"library on LD_LIBRARY_PATH", "connected", env.Environ(lib)},
		{"no library", "unavailable", []string{"LD_LIBRARY_PATH=" + t.TempDir(), "FAKEDCGM_STATE=" + env.StatePath}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v", "-test.count=1")
			cmd.Env = append(append(os.Environ(), childEnv+"="+tc.want), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "--- PASS: TestChild") {
				t.Fatalf("child did not pass:\n%s", out)
			}
		})
	}
}

// TestChild is the child side of TestChildProcesses.
func TestChild(t *testing.T) {
	want := os.Getenv(childEnv)
	if want == "" {
		t.Skip("runs only as a child of TestChildProcesses")
	}
	src, err := New(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	inv, err := src.Inventory(context.Background())
	switch want {
	case "connected":
		if err != nil || inv.GPUs() != 2 {
			t.Fatalf("Inventory = %v, %v; want 2 GPUs from the fake", inv, err)
		}
	case "unavailable":
		if err == nil {
			t.Skip("a libdcgm.so.4 is installed on this machine")
		}
		if !isUnavailable(err) || !strings.Contains(err.Error(), "libdcgm.so.4") {
			t.Fatalf("Inventory = %v, want ErrUnavailable naming libdcgm.so.4", err)
		}
	}
}
