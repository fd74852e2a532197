package collector

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string // error; "" for none
		ok   func(*Options) bool
	}{
		{"defaults", nil, "", func(o *Options) bool {
			return o.Interval == 10*time.Second && o.Timeout == o.Interval && o.FabricInterval == 30*time.Second && o.GPUList == nil
		}},
		{"timeout follows the interval", []string{"--collect.interval=2s"}, "", func(o *Options) bool { return o.Timeout == 2*time.Second }},
		{"given timeout kept", []string{"--collect.interval=2s", "--collect.timeout=1s"}, "", func(o *Options) bool { return o.Timeout == time.Second }},
		{"gpu list", []string{"--collect.gpus=0,2-3"}, "", func(o *Options) bool { return slices.Equal(o.GPUList, []int{0, 2, 3}) }},
		{"interval", []string{"--collect.interval=99ms"}, "--collect.interval must be at least 100ms, got 99ms", nil},
		{"nvlink interval", []string{"--collect.nvlink-interval=10ms"}, "--collect.nvlink-interval must be at least 100ms", nil},
		{"negative timeout", []string{"--collect.timeout=-1s"}, "--collect.timeout must not be negative", nil},
		{"timeout under the floor", []string{"--collect.timeout=1ns"}, "--collect.timeout must be at least 100ms (or 0: the collect interval), got 1ns", nil},
		{"timeout above interval", []string{"--collect.interval=1s", "--collect.timeout=2s"}, "--collect.timeout (2s) must not exceed --collect.interval (1s)", nil},
		{"max series", []string{"--collect.max-series=-1"}, "--collect.max-series must not be negative", nil},
		{"gpus", []string{"--collect.gpus=0-x"}, "--collect.gpus: ", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := &Options{}
			if flagtest.WantErr(t, flagtest.Validate(t, o, tc.args...), tc.want) {
				return
			}
			if !tc.ok(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

func TestOptionsCounters(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	dir := t.TempDir()
	write := func(name, csv string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(csv), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DRIVER_VERSION, label, d\n")
	bad := write("bad.csv", "DCGM_FI_BOGUS, gauge, x\n")
	cases := []struct {
		name   string
		file   string
		naming exposition.Naming
		fields int    // -1: the naming's built-in set
		want   string // error
		log    string
	}{
		{"built-in prometheus set", "", exposition.NamingPrometheus, -1, "", ""},
		{"built-in dcgm set", "", exposition.NamingDCGM, -1, "", ""},
		{"file, prometheus naming", good, exposition.NamingPrometheus, 1, "", "they apply with --naming=dcgm only"},
		{"file, dcgm naming", good, exposition.NamingDCGM, 1, "", ""},
		{"bad file", bad, exposition.NamingPrometheus, 0, "--collect.counters: ", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			o := &Options{CountersFile: tc.file}
			naming := &exposition.NamingOptions{Naming: tc.naming, XIDCountWindow: time.Minute, ClockEventsCountWindow: time.Minute}
			k, err := o.Counters(context.Background(), naming, cat, slog.New(slog.NewTextHandler(&log, nil)))
			if flagtest.WantErr(t, err, tc.want) {
				flagtest.WantErr(t, err, "bad.csv:1") // the file's line
				return
			}
			want := tc.fields
			if want < 0 {
				want = len(exposition.BuiltinCounters(tc.naming, cat).Fields)
			}
			if len(k.Fields) != want {
				t.Errorf("%d fields, want %d", len(k.Fields), want)
			}
			if tc.log != "" && !strings.Contains(log.String(), tc.log) {
				t.Errorf("log %q lacks %q", log.String(), tc.log)
			}
			if cfg := o.Config(k); len(cfg.Fields) != len(k.Fields) || cfg.Interval != o.Interval {
				t.Errorf("Config does not carry the options and counters: %+v", cfg)
			}
		})
	}
}
