package rightsize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// queryReply is a Prometheus whose rules are week()'s and whose every
// query (or, with rules set, whose rules listing) answers with reply.
func queryReply(rules bool, reply http.HandlerFunc) http.Handler {
	f := week()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path == "/api/v1/rules") == rules {
			reply(w, r)
			return
		}
		f.ServeHTTP(w, r)
	})
}

func answer(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

func jsonAnswer(status int, body string) http.HandlerFunc {
	return answer(status, "application/json", body)
}

// vectorOf is a success reply of n series with labels padded to pad bytes.
func vectorOf(n, pad int) string {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metric":{"namespace":"ns","workload":"w%d","pad":%q},"value":[1.7e9,"1"]}`, i, strings.Repeat("x", pad))
	}
	b.WriteString(`]}}`)
	return b.String()
}

// TestReportReplies: each reply a server can give that is not a usable
// answer ends the report with an error that says what came back (never
// "unreachable" once the server answered, never "rules not loaded" for a
// reply that lists no rules at all), shows the server's own error text,
// and names the query and the cap a reply went over.
func TestReportReplies(t *testing.T) {
	t.Parallel()
	const allocQuery = `query "namespace_workload:gpu_allocated_hours:sum_7d"`
	tests := []struct {
		name   string
		rules  bool // the reply is the rules listing's, not the queries'
		reply  http.HandlerFunc
		limits Limits
		is     error
		want   []string
	}{
		{"rules: empty object", true, jsonAnswer(200, `{}`), Limits{}, ErrMalformed, []string{"listing recording rules", "an empty object, without status or data"}},
		{"rules: null", true, jsonAnswer(200, `null`), Limits{}, ErrMalformed, []string{"JSON null"}},
		{"rules: empty body", true, jsonAnswer(200, ``), Limits{}, ErrMalformed, []string{"empty body"}},
		{"rules: data null", true, jsonAnswer(200, `{"status":"success","data":null}`), Limits{}, ErrMalformed, []string{"no data.groups"}},
		{"rules: no status", true, jsonAnswer(200, `{"data":{"groups":[]}}`), Limits{}, ErrMalformed, []string{"no status"}},
		{"query: empty object", false, jsonAnswer(200, `{}`), Limits{}, ErrMalformed, []string{allocQuery, "an empty object"}},
		{"query: null", false, jsonAnswer(200, `null`), Limits{}, ErrMalformed, []string{allocQuery, "JSON null"}},
		{"query: no result", false, jsonAnswer(200, `{"status":"success","data":{"resultType":"vector"}}`), Limits{}, ErrMalformed, []string{"no data.result"}},
		{"query: status unknown", false, jsonAnswer(200, `{"status":"ok","data":{"resultType":"vector","result":[]}}`), Limits{}, ErrMalformed, []string{`status "ok"`}},
		{"query: matrix", false, jsonAnswer(200, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"]]}]}}`), Limits{}, nil, []string{"result type matrix, want vector"}},
		{"query: value not a number", false, jsonAnswer(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"many"]}]}}`), Limits{}, ErrMalformed, []string{`value "many" is not a number`}},
		{"query: histogram", false, jsonAnswer(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{}]}]}}`), Limits{}, ErrMalformed, []string{"native histogram"}},
		{"query: a login page", false, answer(200, "text/html", "<html>sign in</html>"), Limits{}, ErrMalformed, []string{"not with the Prometheus API's JSON", "--prometheus.url"}},
		{"query: API error with 200", false, jsonAnswer(200, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`), Limits{}, nil, []string{"execution: many-to-many matching not allowed"}},
		{"query: 500 with the API's error", false, jsonAnswer(500, `{"status":"error","errorType":"internal","error":"query processing would load too many samples into memory"}`), Limits{},
			nil, []string{allocQuery, "500 Internal Server Error", "internal: query processing would load too many samples"}},
		{"query: 503 with the API's error", false, jsonAnswer(503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`), Limits{},
			nil, []string{"503 Service Unavailable", "timeout: query timed out"}},
		{"query: 502 from a proxy", false, answer(502, "text/plain", "upstream connect error or disconnect/reset before headers\n"), Limits{},
			nil, []string{"502 Bad Gateway: upstream connect error or disconnect/reset before headers"}},
		{"query: 500 with escapes", false, answer(500, "text/plain", "\x1b[2Jboom\x07"), Limits{}, nil, []string{`\x1b[2Jboom\a`}},
		{"query: 500 empty", false, answer(500, "text/plain", ""), Limits{}, nil, []string{"500 Internal Server Error with an empty body"}},
		{"query: over the size cap", false, jsonAnswer(200, vectorOf(200, 100)), Limits{MaxResponseBytes: 4096, MaxSeries: 1000},
			ErrResponseTooLarge, []string{allocQuery, "larger than 4096 bytes", "--prometheus.max-response-bytes"}},
		{"query: over the series cap", false, jsonAnswer(200, vectorOf(4, 0)), Limits{MaxResponseBytes: 1 << 20, MaxSeries: 3},
			ErrTooManySeries, []string{allocQuery, "more than 3 series", "--prometheus.max-series"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := serve(t, queryReply(tt.rules, tt.reply))
			if tt.limits != (Limits{}) {
				p = p.WithLimits(tt.limits)
			}
			_, err := Report(context.Background(), p, Options{Window: mustWindow(t, "7d")})
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, want := range tt.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if strings.Contains(msg, "unreachable") || errors.Is(err, ErrNoRules) || strings.ContainsAny(msg, "\x1b\x07") || len(msg) > 2000 {
				t.Errorf("error %q: says unreachable or rules not loaded, or holds raw controls, or is unbounded", msg)
			}
		})
	}
}

// TestReplyErrorTextBounded: a large error page is shown clipped.
func TestReplyErrorTextBounded(t *testing.T) {
	t.Parallel()
	p := serve(t, queryReply(false, answer(502, "text/html", strings.Repeat("<p>bad gateway</p>", 100_000))))
	_, err := Report(context.Background(), p, Options{Window: mustWindow(t, "7d")})
	if err == nil || !strings.Contains(err.Error(), "<p>bad gateway</p>") || len(err.Error()) > 1000 {
		t.Errorf("error %v: want the page's start, clipped", err)
	}
}

// TestReportDeadline: a server that accepts and never answers, or answers
// and never finishes its body, ends the report at the context's deadline
// with a deadline error that does not call it unreachable. The bound
// checked is generous: the test is about returning at all.
func TestReportDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"no answer", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "no answer before the report's deadline"},
		{"a body that never ends", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
			for i := 0; r.Context().Err() == nil; i++ {
				if _, err := fmt.Fprintf(w, `{"metric":{"workload":"w%d"},"value":[1,"1"]},`, i); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(time.Millisecond):
				}
			}
		}, "answered 200 OK, but the report's deadline came after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := serve(t, queryReply(false, tt.handler))
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Report(ctx, p, Options{Window: mustWindow(t, "7d")})
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "unreachable") {
					t.Errorf("error %v; want a deadline error with %q, not unreachable", err, tt.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("Report still running a minute after its deadline")
			}
		})
	}
}

// TestBoundedBody: a body of exactly the cap is read whole; one byte more
// fails; a context that ended fails the next read.
func TestBoundedBody(t *testing.T) {
	t.Parallel()
	b, err := io.ReadAll(bounded.NewReader(context.Background(), strings.NewReader("12345"), 5))
	if err != nil || string(b) != "12345" {
		t.Errorf("exact cap: %q, %v", b, err)
	}
	if _, err := io.ReadAll(bounded.NewReader(context.Background(), strings.NewReader("123456"), 5)); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("cap+1: %v, want ErrResponseTooLarge", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := io.ReadAll(bounded.NewReader(ctx, strings.NewReader("1"), 5)); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v", err)
	}
}

// TestNewPrometheusURL: only http and https URLs with a host are taken;
// the error names the flag and hides a password.
func TestNewPrometheusURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url string
		ok  bool
	}{
		{"http://prometheus:9090", true},
		{"https://prometheus.example/prom/", true},
		{"http://user:secret@prometheus:9090", true},
		{"prometheus:9090", false},
		{"localhost:9090", false},
		{"prometheus", false},
		{"ftp://prometheus:9090", false},
		{"file:///var/run/prometheus", false},
		{"unix:///var/run/prometheus.sock", false},
		{"http://", false},
		{"http:///api", false},
		{"http://prometheus:9090/?x=1", false},
		{"https://user:secret@prometheus:9090/#f", false},
		{"", false},
	}
	for _, tt := range tests {
		_, err := NewPrometheus(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("NewPrometheus(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "--prometheus.url") || strings.Contains(err.Error(), "secret")) {
			t.Errorf("NewPrometheus(%q): %v: want the flag named and no password", tt.url, err)
		}
	}
}
