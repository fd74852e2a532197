package doctor

import (
	"context"
	"fmt"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// checkCounters resolves every row of the counters file with the
// exporter's parser. It returns the set the fields check watches: the
// file's, or the built-in set when there is no file or it does not load.
func checkCounters(ctx context.Context, cfg Config) ([]fields.Field, Result) {
	res := Result{Check: CheckCounters}
	if cfg.CountersFile == "" {
		res.Status, res.Found = OK, fmt.Sprintf("built-in field set: %d fields (no --collect.counters)", len(cfg.DefaultFields))
		return cfg.DefaultFields, res
	}
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	c, err := config.LoadCountersContext(cctx, cfg.CountersFile, cfg.Catalog)
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("--collect.counters: %v", err)
		res.Fix = "fix the named line (docs/metrics.md lists the fields), or leave --collect.counters empty for the built-in set; the fields check uses the built-in set"
		return cfg.DefaultFields, res
	}
	for _, sk := range c.Skipped {
		res.Details = append(res.Details, fmt.Sprintf("%s: %s skipped: %s", sk.Where, sk.Name, sk.Reason))
	}
	for _, w := range c.Warnings {
		res.Details = append(res.Details, fmt.Sprintf("%s: %s: %s", w.Where, w.Name, w.Message))
	}
	res.Found = fmt.Sprintf("%s: %d fields resolved, %d rows skipped, %d rows read with a change", cfg.CountersFile, len(c.Fields), len(c.Skipped), len(c.Warnings))
	res.Status = OK
	if len(c.Skipped)+len(c.Warnings) > 0 {
		res.Status = Warn
		res.Fix = "edit or remove the rows listed below; the exporter runs without them"
	}
	return c.Fields, res
}

// checkWebConfig reads the web config and the TLS files it names with a
// deadline, then validates it with exporter-toolkit (TLS pair, basic auth
// hashes), as the exporter does at start-up.
func checkWebConfig(ctx context.Context, cfg Config) Result {
	res := Result{Check: CheckWebConfig}
	if cfg.WebConfigFile == "" {
		res.Status, res.Found = OK, "no --web.config.file: plain HTTP without authentication"
		return res
	}
	fix := "fix --web.config.file " + cfg.WebConfigFile + " (exporter-toolkit format: docs/operations.md); relative file names are relative to its directory"
	if cfg.WebConfigFiles != nil {
		cctx, cancel := withTimeout(ctx, cfg)
		err := cfg.WebConfigFiles(cctx, cfg.WebConfigFile)
		cancel()
		if err != nil {
			res.Status, res.Found, res.Fix = Fail, err.Error(), fix
			return res
		}
	}
	if err := web.Validate(cfg.WebConfigFile); err != nil {
		res.Status, res.Found, res.Fix = Fail, fmt.Sprintf("--web.config.file %s: %v", cfg.WebConfigFile, err), fix
		return res
	}
	res.Status, res.Found = OK, fmt.Sprintf("--web.config.file %s is valid; the files it names are readable", cfg.WebConfigFile)
	return res
}
