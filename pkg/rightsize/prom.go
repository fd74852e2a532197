package rightsize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// The reply format relied on here is Prometheus' HTTP API
// (https://prometheus.io/docs/prometheus/latest/querying/api/): every
// reply is a JSON object {"status": "success"|"error", "data": …,
// "errorType": …, "error": …, "warnings": […]}; errors that reach the API
// answer 400, 422 or 503 with that object, errors before it any other
// non-2xx status with any body. An instant query's data is {"resultType":
// "vector"|"matrix"|"scalar"|"string", "result": …}, a vector's result a
// list of {"metric": {labels}, "value": [unix time, "value"]}, the value
// a string because NaN, +Inf and -Inf are not JSON numbers.

// Sample is one series of an instant query's vector result. Value may be
// NaN or ±Inf: it is what Prometheus answered.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Limits bound what one query may bring back: a reply over them ends the
// report with an error naming the query and the limit, before it takes
// the memory (a 50 MB reply decoded whole took gigabytes).
type Limits struct {
	// MaxResponseBytes caps one reply's body.
	MaxResponseBytes int64
	// MaxSeries caps the series of one query's result.
	MaxSeries int
}

// Default limits: far above what the recordings of a large cluster
// answer (a series per workload, a few hundred bytes each).
const (
	DefaultMaxResponseBytes = 32 << 20
	DefaultMaxSeries        = 50_000
)

// Errors a query can end with, besides the server's own.
var (
	// ErrResponseTooLarge: a reply's body is over Limits.MaxResponseBytes.
	ErrResponseTooLarge = bounded.ErrTooLarge
	// ErrTooManySeries: a result has more series than Limits.MaxSeries.
	ErrTooManySeries = errors.New("too many series")
	// ErrMalformed: the server answered, but not with the API's JSON.
	ErrMalformed = errors.New("malformed reply")
)

// errBodyBytes bounds what of an error reply is read and shown.
const (
	errBodyBytes  = 64 << 10
	errShownBytes = 512
)

// Prometheus queries one Prometheus server's HTTP API.
type Prometheus struct {
	// url is the base URL as messages show it (a password redacted).
	url    string
	base   *url.URL
	client *http.Client
	limits Limits
}

// NewPrometheus returns a client of the Prometheus server at rawURL
// (http://host:9090 or https://…, with any path prefix it is served
// under), with the default Limits. The error names --prometheus.url.
func NewPrometheus(rawURL string) (*Prometheus, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--prometheus.url=%q: %w", rawURL, err)
	}
	// Without this check "prometheus:9090" parses as scheme "prometheus"
	// and fails later as an unreachable server.
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("--prometheus.url=%q: want an http:// or https:// URL with a host, such as http://prometheus:9090", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--prometheus.url=%q: want a base URL without ?query or #fragment", u.Redacted())
	}
	return &Prometheus{url: u.Redacted(), base: u, client: &http.Client{},
		limits: Limits{MaxResponseBytes: DefaultMaxResponseBytes, MaxSeries: DefaultMaxSeries}}, nil
}

// WithLimits returns a copy of p that applies l.
func (p *Prometheus) WithLimits(l Limits) *Prometheus {
	c := *p
	c.limits = l
	return &c
}

// Query runs an instant PromQL query at the server's time.
func (p *Prometheus) Query(ctx context.Context, query string) ([]Sample, error) {
	return p.query(ctx, query, nil)
}

// query is Query keeping only the labels named in keep (all when nil):
// a report holds every query's samples until it is done, and labels it
// does not read would multiply what it holds.
func (p *Prometheus) query(ctx context.Context, query string, keep []string) ([]Sample, error) {
	what := "query " + strconv.Quote(strings.Join(strings.Fields(query), " "))
	v := vectorReader{max: p.limits.MaxSeries, keep: keep}
	if err := p.get(ctx, "api/v1/query", url.Values{"query": {query}}, what, v.read); err != nil {
		return nil, err
	}
	switch {
	case v.resultType == "":
		return nil, p.malformed(what, "no data.resultType")
	case v.resultType != "vector":
		return nil, fmt.Errorf("prometheus %s: %s: result type %s, want vector", p.url, what, v.resultType)
	case !v.sawResult:
		return nil, p.malformed(what, "no data.result")
	}
	return v.samples, nil
}

// HasRecording reports whether a loaded rule group records name.
func (p *Prometheus) HasRecording(ctx context.Context, name string) (bool, error) {
	var data struct {
		Groups *[]struct {
			Rules []struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	read := func(dec *json.Decoder) error { return dec.Decode(&data) }
	// type=record leaves out the alerting rules and their active alerts,
	// the bulk of a large rule set's reply; servers that predate it
	// ignore it, and the rule type is checked below anyway.
	const what = "listing recording rules"
	if err := p.get(ctx, "api/v1/rules", url.Values{"type": {"record"}}, what, read); err != nil {
		return false, err
	}
	if data.Groups == nil {
		return false, p.malformed(what, "no data.groups")
	}
	for _, g := range *data.Groups {
		for _, r := range g.Rules {
			if r.Type == "recording" && r.Name == name {
				return true, nil
			}
		}
	}
	return false, nil
}

// get sends GET path?params and hands the reply's data field to readData,
// from a body read within ctx and p's size cap. what names the request in
// errors. Only an error before any answer calls the server unreachable.
func (p *Prometheus) get(ctx context.Context, path string, params url.Values, what string, readData func(*json.Decoder) error) error {
	u := p.base.JoinPath(path)
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("prometheus %s: %s: %w", p.url, what, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("prometheus %s: %s: no answer before the report's deadline: %w", p.url, what, ctx.Err())
		}
		return fmt.Errorf("prometheus %s unreachable (%s): %w", p.url, what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return p.errorReply(ctx, resp, what)
	}
	body := bounded.NewReader(ctx, resp.Body, p.limits.MaxResponseBytes)
	env, err := readEnvelope(json.NewDecoder(body), readData)
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		return fmt.Errorf("prometheus %s: %s: reply larger than %d bytes (--prometheus.max-response-bytes); narrow it with --namespace or raise the cap: %w",
			p.url, what, p.limits.MaxResponseBytes, err)
	case errors.Is(err, ErrTooManySeries):
		return fmt.Errorf("prometheus %s: %s: more than %d series (--prometheus.max-series); narrow it with --namespace or raise the cap: %w",
			p.url, what, p.limits.MaxSeries, err)
	case ctx.Err() != nil:
		return fmt.Errorf("prometheus %s: %s: answered %s, but the report's deadline came after %d bytes of the reply: %w",
			p.url, what, resp.Status, body.N, ctx.Err())
	case err != nil && body.Err != nil:
		return fmt.Errorf("prometheus %s: %s: answered %s, then reading the reply failed after %d bytes: %w", p.url, what, resp.Status, body.N, body.Err)
	case errors.As(err, new(*json.SyntaxError)):
		return p.malformed(what, fmt.Sprintf("answered %s, but not with the Prometheus API's JSON (is --prometheus.url the server's base URL?): %v", resp.Status, err))
	case err != nil:
		return p.malformed(what, fmt.Sprintf("answered %s: %v", resp.Status, err))
	case env.status == "error":
		return fmt.Errorf("prometheus %s: %s: %s", p.url, what, apiErrorText(env))
	case env.status != "success":
		return p.malformed(what, fmt.Sprintf("status %q, want success or error", printable(clip(env.status))))
	}
	return nil
}

// errorReply turns a non-2xx answer into an error that shows the server's
// reason: the API's errorType and error when the body is its JSON, else
// the body's first bytes (a proxy's or load balancer's page).
func (p *Prometheus) errorReply(ctx context.Context, resp *http.Response, what string) error {
	// The body's first errBodyBytes are enough to show the reason.
	b, readErr := bounded.ReadAll(ctx, io.NopCloser(io.LimitReader(resp.Body, errBodyBytes)), errBodyBytes)
	var env envelope
	if json.Unmarshal(b, &env) == nil && (env.Error != "" || env.ErrorType != "") {
		return fmt.Errorf("prometheus %s: %s: answered %s: %s", p.url, what, resp.Status, apiErrorText(env))
	}
	text := strings.TrimSpace(string(b))
	if len(text) > errShownBytes {
		text = text[:errShownBytes] + "…"
	}
	switch {
	case text != "":
		return fmt.Errorf("prometheus %s: %s: answered %s: %s", p.url, what, resp.Status, printable(strings.ToValidUTF8(text, "\uFFFD")))
	case readErr != nil:
		return fmt.Errorf("prometheus %s: %s: answered %s, then reading the reply failed: %w", p.url, what, resp.Status, readErr)
	}
	return fmt.Errorf("prometheus %s: %s: answered %s with an empty body", p.url, what, resp.Status)
}

func (p *Prometheus) malformed(what, why string) error {
	return fmt.Errorf("prometheus %s: %s: %w: %s", p.url, what, ErrMalformed, why)
}

// envelope is a reply's fields besides data.
type envelope struct {
	status    string
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
}

func apiErrorText(env envelope) string {
	return printable(clip(env.ErrorType)) + ": " + printable(clip(env.Error))
}

// clip bounds a server's text in a message.
func clip(s string) string {
	if len(s) > errShownBytes {
		return strings.ToValidUTF8(s[:errShownBytes], "") + "…"
	}
	return s
}

// readEnvelope reads a reply object token by token, so that data is
// decoded as it arrives (by readData) rather than held whole.
func readEnvelope(dec *json.Decoder, readData func(*json.Decoder) error) (envelope, error) {
	var env envelope
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return env, errors.New("empty body")
	case err != nil:
		return env, err
	case tok == nil:
		return env, errors.New("the reply is JSON null")
	case tok != json.Delim('{'):
		return env, fmt.Errorf("the reply is %v, not a JSON object", tok)
	}
	sawStatus, sawData := false, false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return env, err
		}
		switch key {
		case "status":
			sawStatus = true
			err = dec.Decode(&env.status)
		case "errorType":
			err = dec.Decode(&env.ErrorType)
		case "error":
			err = dec.Decode(&env.Error)
		case "data":
			sawData = true
			err = readData(dec)
		default: // warnings, infos and what later versions add
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return env, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return env, err
	}
	switch {
	case !sawStatus && !sawData:
		return env, errors.New("an empty object, without status or data")
	case !sawStatus:
		return env, errors.New("no status")
	case !sawData && env.status == "success":
		return env, errors.New("status success without data")
	}
	return env, nil
}

// vectorReader reads a query's data, counting series as they arrive.
type vectorReader struct {
	max        int
	keep       []string
	resultType string
	sawResult  bool
	samples    []Sample
}

func (v *vectorReader) read(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // data null: Query reports no resultType
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("data is %v, not a JSON object", tok)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		switch key {
		case "resultType":
			if err := dec.Decode(&v.resultType); err != nil {
				return err
			}
			if v.resultType != "vector" {
				return nil // Query reports it; the rest is not read
			}
		case "result":
			v.sawResult = true
			if err := v.readResult(dec); err != nil {
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token()
	return err
}

func (v *vectorReader) readResult(dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('[') {
		return fmt.Errorf("data.result is %v, not a list", tok)
	}
	for dec.More() {
		if len(v.samples) >= v.max {
			return ErrTooManySeries
		}
		var s struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
		}
		if err := dec.Decode(&s); err != nil {
			return err
		}
		var text string
		ok := len(s.Value) == 2
		if ok {
			text, ok = s.Value[1].(string)
		}
		if !ok {
			return fmt.Errorf("series %d: value %v, want [time, \"number\"] (a native histogram is not a figure)", len(v.samples)+1, s.Value)
		}
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return fmt.Errorf("series %d: value %q is not a number", len(v.samples)+1, printable(clip(text)))
		}
		if v.keep != nil {
			kept := make(map[string]string, len(v.keep))
			for _, k := range v.keep {
				if l, ok := s.Metric[k]; ok {
					kept[k] = l
				}
			}
			s.Metric = kept
		}
		v.samples = append(v.samples, Sample{Labels: s.Metric, Value: f})
	}
	_, err := dec.Token()
	return err
}
