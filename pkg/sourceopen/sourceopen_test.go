package sourceopen

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func TestOpenSim(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	given := filepath.Join(t.TempDir(), "kubelet.sock")
	tests := []struct {
		name       string
		args       []string
		settings   source.Settings
		wantSocket string // "temp": a new temporary socket; "": none
		wantErr    string
	}{
		{name: "no kubelet", args: []string{"--source=sim", "--sim.scenario=demo"}},
		{name: "kubelet on a temporary socket", args: []string{"--source=sim", "--sim.scenario=demo"}, settings: source.Settings{Kubelet: true}, wantSocket: "temp"},
		{name: "kubelet on the given socket", args: []string{"--source=sim", "--sim.scenario=demo"}, settings: source.Settings{Kubelet: true, KubeletSocket: given}, wantSocket: given},
		{name: "unknown built-in scenario", args: []string{"--source=sim", "--sim.scenario=nosuch"}, wantErr: "--sim.scenario"},
		{name: "missing scenario file", args: []string{"--source=sim", "--sim.scenario=/nonexistent/s.yaml"}, wantErr: "--sim.scenario: scenario:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := parse(t, tt.args...)
			if err := opts.Validate(); err != nil {
				t.Fatal(err)
			}
			o, err := opts.Open(ctx, Settings{Settings: tt.settings}, logger)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open: err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer o.Close()
			if o.Source == nil || o.Source.Name() != "sim" {
				t.Fatalf("Source = %v, want the simulator", o.Source)
			}
			if _, err := o.Source.Inventory(ctx); err != nil {
				t.Fatalf("Inventory: %v", err)
			}
			switch tt.wantSocket {
			case "":
				if o.KubeletSocket != "" {
					t.Fatalf("KubeletSocket = %q, want none", o.KubeletSocket)
				}
				return
			case "temp":
			default:
				if o.KubeletSocket != tt.wantSocket {
					t.Fatalf("KubeletSocket = %q, want %q", o.KubeletSocket, tt.wantSocket)
				}
			}
			if _, err := os.Stat(o.KubeletSocket); err != nil {
				t.Fatalf("simulated kubelet socket: %v", err)
			}
			socket := o.KubeletSocket
			o.Close()
			o.Close() // twice is harmless
			if tt.wantSocket == "temp" {
				if _, err := os.Stat(filepath.Dir(socket)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("temporary directory %s left after Close: %v", filepath.Dir(socket), err)
				}
			}
		})
	}
}
