package server

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string // "" for none
	}{
		{"defaults", nil, ""},
		{"listen address", []string{"--web.listen-address=nowhere"}, `--web.listen-address "nowhere": want host:port`},
		{"health address", []string{"--web.health-listen-address=9401"}, `--web.health-listen-address "9401"`},
		{"telemetry path", []string{"--web.telemetry-path=/healthz"}, `--web.telemetry-path "/healthz" is the exporter's own health endpoint`},
		{"write timeout", []string{"--web.write-timeout=0s"}, "--web.write-timeout must be at least 1s, got 0s"},
		{"write timeout under the floor", []string{"--web.write-timeout=1ns"}, "--web.write-timeout must be at least 1s, got 1ns"},
		{"shutdown grace", []string{"--web.shutdown-grace=-1s"}, "--web.shutdown-grace must be at least 100ms, got -1s"},
		{"shutdown grace under the floor", []string{"--web.shutdown-grace=1ms"}, "--web.shutdown-grace must be at least 100ms, got 1ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := &Options{}
			if flagtest.WantErr(t, flagtest.Validate(t, o, tc.args...), tc.want) {
				return
			}
			// The settings without a flag bound slow clients.
			if o.ReadHeaderTimeout <= 0 || o.IdleTimeout <= 0 || o.MaxHeaderBytes <= 0 || o.SelfMetricsMaxAge <= 0 || o.ShutdownGrace != 10*time.Second {
				t.Errorf("defaults %+v", o)
			}
		})
	}
}

func TestOptionsOpen(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // the subtests run after this function returns
	cases := []struct {
		name string
		args []string
		want string // "" for a listening server
	}{
		{"listens", []string{"--web.listen-address=127.0.0.1:0"}, ""},
		{"port in use", []string{"--web.listen-address=" + busy.Addr().String()}, "--web.listen-address " + busy.Addr().String()},
		{"missing web config", []string{"--web.listen-address=127.0.0.1:0", "--web.config.file=/nonexistent/web.yml"}, "--web.config.file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := &Options{}
			if err := flagtest.Validate(t, o, tc.args...); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			s, err := o.Open(context.Background(), &fakePages{}, reg, reg, slog.New(slog.DiscardHandler))
			if flagtest.WantErr(t, err, tc.want) {
				return
			}
			if len(s.Addrs()) != 1 {
				t.Errorf("listening on %v, want one address", s.Addrs())
			}
			s.closeListeners()
		})
	}
}
