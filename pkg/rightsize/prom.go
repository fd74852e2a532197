package rightsize

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Sample is one series of an instant query's vector result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query through Prometheus' HTTP API
// (GET /api/v1/query) at base.
func Query(ctx context.Context, c *http.Client, base, query string) ([]Sample, error) {
	u := strings.TrimRight(base, "/") + "/api/v1/query?query=" + url.QueryEscape(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus url %q: %w", base, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s unreachable: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: reading the answer to %q: %w", base, query, err)
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("prometheus %s: answer to %q (HTTP %d) is not API JSON: %w", base, query, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus %s: query %q: %s", base, query, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("prometheus %s: query %q: result type %q, want vector", base, query, r.Data.ResultType)
	}
	out := make([]Sample, 0, len(r.Data.Result))
	for _, s := range r.Data.Result {
		str, ok := s.Value[1].(string)
		if !ok {
			return nil, fmt.Errorf("prometheus %s: query %q: value %v is not a string", base, query, s.Value[1])
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("prometheus %s: query %q: value %q: %w", base, query, str, err)
		}
		out = append(out, Sample{Labels: s.Metric, Value: v})
	}
	return out, nil
}
