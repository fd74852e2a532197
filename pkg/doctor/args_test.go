package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cmdline := write("cmdline", "/bin/gpu-exporter\x00--source=nvml\x00--collect.interval=5s\x00")
	doctorLine := write("doctor", "gpu-exporter\x00doctor\x00--source=dcgm\x00")
	empty := write("empty", "")
	tests := []struct {
		args   []string
		output string
		rest   []string
		err    string
	}{
		{nil, "text", nil, ""},
		{[]string{"--output=json", "--source=sim"}, "json", []string{"--source=sim"}, ""},
		{[]string{"--output", "text", "-v"}, "text", []string{"-v"}, ""},
		{[]string{"--output"}, "", nil, "--output needs a value"},
		{[]string{"--output=yaml"}, "", nil, `--output="yaml": want text or json`},
		{[]string{"--args-from=" + cmdline, "--log.level=debug"}, "text", []string{"--source=nvml", "--collect.interval=5s", "--log.level=debug"}, ""},
		{[]string{"--args-from", doctorLine}, "text", []string{"--source=dcgm"}, ""},
		{[]string{"--args-from"}, "", nil, "--args-from needs a file"},
		{[]string{"--args-from=" + empty}, "", nil, "empty command line"},
		{[]string{"--args-from=" + filepath.Join(dir, "missing")}, "", nil, "--args-from: open " + filepath.Join(dir, "missing")},
	}
	for _, tt := range tests {
		output, rest, err := Args(tt.args, "doctor")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Args(%q) error %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || output != tt.output || !slices.Equal(rest, tt.rest) {
			t.Errorf("Args(%q) = %q %q %v, want %q %q", tt.args, output, rest, err, tt.output, tt.rest)
		}
	}
}

// TestArgsFromHostPID: with hostPID (process accounting) /proc/1/cmdline
// is the host's init; the doctor refuses it and names the exporters the
// procfs shows, not itself.
func TestArgsFromHostPID(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	for pid, line := range map[string]string{
		"1":    "/usr/lib/systemd/systemd\x00--switched-root\x00--system\x00--deserialize=31\x00",
		"812":  "/usr/bin/containerd\x00",
		"4242": "/usr/bin/gpu-exporter\x00--collect.processes=container\x00--path.procfs=/host/proc\x00",
		"4300": "gpu-exporter\x00doctor\x00--args-from=/proc/1/cmdline\x00",
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		file string
		want string // substring of the error; "" for none
	}{
		{filepath.Join(proc, "1", "cmdline"), "the command line of /usr/lib/systemd/systemd, not of gpu-exporter; with hostPID (process accounting) PID 1 is the host's init: use --args-from=" + filepath.Join(proc, "4242", "cmdline")},
		{filepath.Join(proc, "812", "cmdline"), "use --args-from=" + filepath.Join(proc, "4242", "cmdline")},
		{filepath.Join(proc, "4242", "cmdline"), ""},
		{filepath.Join(proc, "4300", "cmdline"), ""},
	}
	for _, tc := range cases {
		_, err := argsFrom([]string{"--args-from=" + tc.file}, "doctor")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--args-from=%s: error %v, want %q", tc.file, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "4300") {
			t.Errorf("--args-from=%s: error %v names the doctor's own command line", tc.file, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(proc, "4242")); err != nil {
		t.Fatal(err)
	}
	if _, err := argsFrom([]string{"--args-from=" + filepath.Join(proc, "1", "cmdline")}, "doctor"); err == nil || !strings.Contains(err.Error(), "shows no running gpu-exporter") {
		t.Errorf("without a running exporter: error %v, want one saying none runs", err)
	}
}

// argsFromWithin runs argsFrom and fails the test if it has not returned
// within limit: a read that blocks would hang the doctor.
func argsFromWithin(t *testing.T, limit time.Duration, args []string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := argsFrom(args, "doctor")
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("argsFrom(%q) still blocked after %s", args, limit)
		return nil
	}
}

// mkfifo makes a named pipe nobody writes to, whose read blocks as the
// read of a locked process's cmdline does; at cleanup a writer opens and
// closes it, so that a reader still blocked returns.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
}

// TestArgsFromDoesNotBlock: neither the --args-from file nor the scan of
// the procfs for the exporter's command line may hang the doctor.
func TestArgsFromDoesNotBlock(t *testing.T) {
	proc := t.TempDir()
	for pid, line := range map[string]string{
		"1":    "/sbin/init\x00",
		"4242": "/usr/bin/gpu-exporter\x00--collect.processes=container\x00",
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(proc, "77"), 0o750); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(proc, "77", "cmdline"))
	pipe := filepath.Join(t.TempDir(), "cmdline")
	mkfifo(t, pipe)

	old := cmdlineScanTimeout
	cmdlineScanTimeout = 50 * time.Millisecond
	t.Cleanup(func() { cmdlineScanTimeout = old })
	cases := []struct {
		name, file, want string
	}{
		{"the file is a named pipe", pipe, "not a regular file"},
		// A cmdline that is a named pipe is skipped without opening it
		// (bounded.ReadFile refuses what is not a regular file); a real
		// cmdline that blocks is abandoned at the deadline as any bounded
		// read is (pkg/bounded's tests).
		{"a process's cmdline is a named pipe", filepath.Join(proc, "1", "cmdline"), filepath.Join(proc, "4242", "cmdline")},
	}
	for _, tc := range cases {
		err := argsFromWithin(t, 20*time.Second, []string{"--args-from=" + tc.file})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: error %v, want one naming %s with %q", tc.name, err, tc.file, tc.want)
		}
	}
}
