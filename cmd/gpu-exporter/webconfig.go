package main

import (
	"context"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
)

// checkWebConfig reads --web.config.file and the files it names with a
// deadline, before exporter-toolkit reads them without one: a named pipe
// or a hung mount fails start-up with the flag and file named instead of
// blocking it. exporter-toolkit then checks the content (server.New).
func checkWebConfig(ctx context.Context, path string) error {
	data, err := config.ReadFile(ctx, path)
	if err != nil {
		return fmt.Errorf("--web.config.file: %w", err)
	}
	// Only the file names matter here; a file that does not parse is left
	// to exporter-toolkit, whose message is the one users know.
	var wc struct {
		TLS struct {
			Cert string `yaml:"cert_file"`
			Key  string `yaml:"key_file"`
			CA   string `yaml:"client_ca_file"`
		} `yaml:"tls_server_config"`
	}
	if yaml.Unmarshal(data, &wc) != nil {
		return nil
	}
	for _, f := range []struct{ key, name string }{
		{"tls_server_config.cert_file", wc.TLS.Cert},
		{"tls_server_config.key_file", wc.TLS.Key},
		{"tls_server_config.client_ca_file", wc.TLS.CA},
	} {
		if f.name == "" {
			continue
		}
		// Relative names are relative to the web config's directory, as
		// exporter-toolkit resolves them (TLSConfig.SetDirectory).
		p := f.name
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		if _, err := config.ReadFile(ctx, p); err != nil {
			return fmt.Errorf("--web.config.file %s: %s: %w", path, f.key, err)
		}
	}
	return nil
}
