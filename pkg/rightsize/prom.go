package rightsize

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Sample is one series of an instant query's vector result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Prometheus queries one Prometheus server's HTTP API.
type Prometheus struct {
	url string
	api promv1.API
}

// NewPrometheus returns a client of the Prometheus server at url
// (http://host:9090, with any path prefix it is served under).
func NewPrometheus(url string) (*Prometheus, error) {
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("--prometheus.url=%q: %w", url, err)
	}
	return &Prometheus{url: url, api: promv1.NewAPI(c)}, nil
}

// Query runs an instant PromQL query now.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	v, _, _, err := p.api.Query(ctx, query, time.Now())
	if err != nil {
		return nil, p.wrap(err, "query "+query)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: query %q: result type %s, want vector", p.url, query, v.Type())
	}
	out := make([]Sample, 0, len(vec))
	for _, s := range vec {
		labels := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			labels[string(k)] = string(v)
		}
		out = append(out, Sample{Labels: labels, Value: float64(s.Value)})
	}
	return out, nil
}

// HasRecording reports whether a loaded rule group records name.
func (p *Prometheus) HasRecording(ctx context.Context, name string) (bool, error) {
	rules, err := p.api.Rules(ctx, nil)
	if err != nil {
		return false, p.wrap(err, "listing rules")
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if rr, ok := r.(promv1.RecordingRule); ok && rr.Name == name {
				return true, nil
			}
		}
	}
	return false, nil
}

// wrap names the server and says whether it answered at all.
func (p *Prometheus) wrap(err error, what string) error {
	var apiErr *promv1.Error
	if errors.As(err, &apiErr) {
		return fmt.Errorf("prometheus %s: %s: %w", p.url, what, err)
	}
	return fmt.Errorf("prometheus %s unreachable (%s): %w", p.url, what, err)
}
