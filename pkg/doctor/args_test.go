package doctor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
		{[]string{"--args-from=" + filepath.Join(dir, "missing")}, "", nil, "--args-from: open"},
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
