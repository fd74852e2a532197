package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/doctor"
)

// doctorJSON is the shape of `gpu-exporter doctor --output=json`.
type doctorJSON struct {
	Checks         []doctor.Result `json:"checks"`
	OK, Warn, Fail int
}

func (d doctorJSON) status(check string) doctor.Status {
	for _, c := range d.Checks {
		if c.Check == check {
			return c.Status
		}
	}
	return "absent"
}

func (d doctorJSON) found(check string) string {
	for _, c := range d.Checks {
		if c.Check == check {
			return c.Found
		}
	}
	return ""
}

func TestDoctorSubcommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("DCGM_FI_NO_SUCH_FIELD, gauge, x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmdline := filepath.Join(dir, "cmdline")
	if err := os.WriteFile(cmdline, []byte("/usr/bin/gpu-exporter\x00--source=sim\x00--kubernetes.enabled=false\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		// want maps checks to their expected status in the JSON report.
		want map[string]doctor.Status
		// wantFound maps checks to a substring of what they found.
		wantFound map[string]string
		// wantErr is a substring of stderr.
		wantErr string
	}{
		{
			name: "simulator passes every check", wantCode: 0,
			args: []string{"doctor", "--source=sim", "--output=json", "--log.level=warn"},
			want: map[string]doctor.Status{doctor.CheckSource: doctor.OK, doctor.CheckFields: doctor.OK, doctor.CheckKubelet: doctor.OK,
				doctor.CheckCounters: doctor.OK, doctor.CheckWebConfig: doctor.OK, doctor.CheckDevices: doctor.OK, doctor.CheckProfiling: doctor.OK},
		},
		{
			name: "the exporter's environment twins apply", wantCode: 1,
			args: []string{"doctor", "--output", "json", "--log.level=warn"},
			env:  map[string]string{"GPU_EXPORTER_SOURCE": "sim", "GPU_EXPORTER_COLLECT_COUNTERS": bad},
			want: map[string]doctor.Status{doctor.CheckCounters: doctor.Fail, doctor.CheckSource: doctor.OK},
		},
		{
			name: "attribution off skips the kubelet", wantCode: 0,
			args: []string{"doctor", "--source=sim", "--kubernetes.enabled=false", "--output=json", "--log.level=warn"},
			want: map[string]doctor.Status{doctor.CheckKubelet: doctor.OK},
		},
		{
			name: "flags of a running exporter", wantCode: 0,
			args: []string{"doctor", "--args-from=" + cmdline, "--output=json", "--log.level=warn"},
			want: map[string]doctor.Status{doctor.CheckSource: doctor.OK, doctor.CheckKubelet: doctor.OK},
			// --kubernetes.enabled=false comes from the file.
			wantFound: map[string]string{doctor.CheckKubelet: "--kubernetes.enabled=false"},
		},
		{
			name: "flags given here come after the running exporter's", wantCode: 0,
			args:      []string{"doctor", "--args-from", cmdline, "--kubernetes.enabled=auto", "--output=json", "--log.level=warn"},
			want:      map[string]doctor.Status{doctor.CheckKubelet: doctor.OK},
			wantFound: map[string]string{doctor.CheckKubelet: "answers List"},
		},
		{
			name: "process accounting on the simulator's processes", wantCode: 0,
			args:      []string{"doctor", "--source=sim", "--sim.scenario=timeslicing", "--output=json", "--log.level=warn"},
			want:      map[string]doctor.Status{doctor.CheckProcesses: doctor.OK},
			wantFound: map[string]string{doctor.CheckProcesses: "--collect.processes=container: 4 devices sampled"},
		},
		{
			name: "process accounting off is skipped", wantCode: 0,
			args:      []string{"doctor", "--source=sim", "--collect.processes=off", "--output=json", "--log.level=warn"},
			want:      map[string]doctor.Status{doctor.CheckProcesses: doctor.OK},
			wantFound: map[string]string{doctor.CheckProcesses: "skipped: process accounting is off"},
		},
		{
			name: "dcgm naming does not run process accounting", wantCode: 0,
			args:      []string{"doctor", "--source=sim", "--naming=dcgm", "--output=json", "--log.level=warn"},
			want:      map[string]doctor.Status{doctor.CheckProcesses: doctor.OK},
			wantFound: map[string]string{doctor.CheckProcesses: "--naming=dcgm does not run process accounting"},
		},
		{
			name: "container mode given with dcgm naming has no effect", wantCode: 0,
			args:      []string{"doctor", "--source=sim", "--naming=dcgm", "--output=json", "--log.level=error"},
			env:       map[string]string{"GPU_EXPORTER_COLLECT_PROCESSES": "container"},
			want:      map[string]doctor.Status{doctor.CheckProcesses: doctor.Warn},
			wantFound: map[string]string{doctor.CheckProcesses: "--collect.processes=container has no effect"},
		},
		{name: "process mode with dcgm naming", args: []string{"doctor", "--naming=dcgm", "--collect.processes=process"}, wantCode: 2, wantErr: "--collect.processes=process needs --naming=prometheus"},
		{name: "args-from missing file", args: []string{"doctor", "--args-from=" + filepath.Join(dir, "absent")}, wantCode: 2, wantErr: "--args-from"},
		{name: "unknown output", args: []string{"doctor", "--output=xml"}, wantCode: 2, wantErr: `--output="xml"`},
		{name: "output without a value", args: []string{"doctor", "--output"}, wantCode: 2, wantErr: "--output needs a value"},
		{name: "bad exporter flag", args: []string{"doctor", "--source=gpu"}, wantCode: 2, wantErr: "--source"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, envFrom(tc.env), &stdout, &stderr, nil)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.wantErr)
			}
			if tc.want == nil {
				return
			}
			var got doctorJSON
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
			}
			for check, st := range tc.want {
				if s := got.status(check); s != st {
					t.Errorf("%s: %s, want %s\n%s", check, s, st, stdout.String())
				}
			}
			for check, sub := range tc.wantFound {
				if f := got.found(check); !strings.Contains(f, sub) {
					t.Errorf("%s found %q, want %q", check, f, sub)
				}
			}
			if got.OK+got.Warn+got.Fail != len(got.Checks) {
				t.Errorf("counts %d+%d+%d do not add up to %d checks", got.OK, got.Warn, got.Fail, len(got.Checks))
			}
		})
	}
}

// TestDoctorAutoWithoutGPU runs the real auto path on a host without the
// driver: both libraries are reported missing with the fix.
func TestDoctorAutoWithoutGPU(t *testing.T) {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64"} {
		if _, err := os.Stat(filepath.Join(dir, doctor.LibNVML)); err == nil {
			t.Skip("the NVIDIA driver is installed here")
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"doctor", "--source=auto", "--log.level=error"}, noEnv, &stdout, &stderr, nil)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"fail gpu-source: --source=auto: no GPU source answered",
		"neither libdcgm.so.4 nor libnvidia-ml.so.1 found",
		"- libdcgm.so.4: not found", "- libnvidia-ml.so.1: not found",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}
