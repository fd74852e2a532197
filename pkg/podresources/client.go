// Package podresources attributes GPUs to the pods, namespaces and
// containers holding them, from the kubelet pod-resources v1 API.
//
// A Client keeps one gRPC connection to the kubelet's unix socket and
// refreshes an immutable Table every refresh interval, with exactly one List
// call. Scrapes read the current Table through an atomic pointer and never
// call the kubelet. When the kubelet cannot be reached or answers badly,
// the Table becomes empty at once (no pod labels rather than stale ones),
// Up reports false, and the client retries with capped exponential backoff.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
)

// errSocketMissing reports that the kubelet socket file does not exist.
var errSocketMissing = errors.New("kubelet pod-resources socket does not exist")

// maxMessageSize is the largest List reply accepted, as the kubelet's own
// pod-resources client allows: large nodes exceed gRPC's 4 MiB default.
const maxMessageSize = 16 << 20

// logWindow is how long log lines of one cause are held back after one is
// written (see package logthrottle): a kubelet that keeps reporting new bad
// ids, or flaps, costs one line per cause per window.
const logWindow = time.Minute

// maxLogCauses bounds the log causes tracked; causes name resources, which
// a glob such as nvidia.com/mig-* lets the kubelet vary without bound.
const maxLogCauses = 64

// maxLoggedIDLen bounds a device id quoted in a log line.
const maxLoggedIDLen = 80

// Client follows the kubelet's pod-resources API.
type Client struct {
	cfg    Config
	logger *slog.Logger
	// logs rate-limits the lines that input can repeat.
	logs   *logthrottle.Logger
	reg    prometheus.Registerer
	m      *metrics
	conn   *grpc.ClientConn
	codec  *tolerantCodec
	lister podresourcesv1.PodResourcesListerClient
	// primed is set by Prime, with its refresh's error: Run waits before
	// its first List.
	primed    bool
	primedErr error
	// after is time.After and now is time.Now; tests replace them.
	after func(time.Duration) <-chan time.Time
	now   func() time.Time

	// Read by any goroutine.
	table       atomic.Pointer[Table]
	up          atomic.Bool
	allocatable atomic.Pointer[[]string]

	// Owned by the refreshing goroutine (Run).
	empty            *Table
	state            linkState
	downCause        string
	failures         int
	allocUnsupported bool
	// allocUnsupportedLogged: Unimplemented was logged and the call has not
	// worked since; it is asked again after each reconnect, quietly.
	allocUnsupportedLogged bool
	allocFailing           bool
	lastMalformed          map[string]bool
	lastAllocMalformed     map[string]bool
	lastNoMatch            string
	lastIgnored            string
}

type linkState uint8

const (
	stateUnknown linkState = iota
	stateUp
	stateDown
)

// New validates cfg and prepares a client; it does not contact the kubelet,
// so a missing socket is not an error here (Run reports and retries it).
// Errors name the Config field at fault. Self-metrics are registered on reg
// unless it is nil. A nil logger discards logs.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.ResourceNames = slices.Clone(cfg.ResourceNames)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	codec := newTolerantCodec()
	conn, err := grpc.NewClient("unix://"+cfg.Socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(codec.callOptions()...),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: cfg.MinBackoff, Multiplier: 2, Jitter: 0.1, MaxDelay: cfg.MaxBackoff},
			MinConnectTimeout: cfg.CallTimeout,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("podresources: kubelet connection to %s: %w", cfg.Socket, err)
	}
	c := &Client{
		cfg:    cfg,
		logger: logger.With("socket", cfg.Socket),
		reg:    reg,
		conn:   conn,
		codec:  codec,
		lister: podresourcesv1.NewPodResourcesListerClient(conn),
		empty:  &Table{},
		after:  time.After,
		now:    time.Now,
	}
	c.logs = logthrottle.New(c.logger, logthrottle.Config{
		Window: logWindow, MaxCauses: maxLogCauses, Now: func() time.Time { return c.now() },
	})
	if c.m, err = newMetrics(reg, c.logs); err != nil {
		_ = conn.Close()
		return nil, err
	}
	c.table.Store(c.empty)
	return c, nil
}

// Prime makes the first refresh, before Run, so that the first collection
// joins what the kubelet reports: a collection that ran first served every
// GPU without pod labels for an interval, then with them, two series per
// held GPU across a restart. It waits at most CallTimeout for each call
// (the documented outage behaviour follows when the kubelet does not
// answer in time). Run then starts with the wait that follows this
// refresh instead of a second List at once.
func (c *Client) Prime(ctx context.Context) error {
	err := c.refresh(ctx)
	c.primed, c.primedErr = true, err
	return err
}

// Run refreshes the table until ctx is done: every RefreshInterval while the
// kubelet answers, after a capped exponential backoff while it does not.
// Call it once, from one goroutine.
func (c *Client) Run(ctx context.Context) {
	primed := c.primed
	for {
		delay := c.cfg.RefreshInterval
		err := c.primedErr
		if !primed {
			err = c.refresh(ctx)
		}
		primed = false
		if err != nil {
			delay = c.retryDelay()
		}
		select {
		case <-ctx.Done():
			return
		case <-c.after(delay):
		}
	}
}

// Close releases the connection and unregisters the self-metrics. Call it
// after Run has returned.
func (c *Client) Close() error {
	c.m.unregister(c.reg)
	return c.conn.Close()
}

// Table returns the current attribution snapshot, never nil. The pointer
// stays the same until the content changes, so callers may cache what they
// derive from it by pointer. It is empty until the first successful refresh
// and whenever the last refresh failed.
func (c *Client) Table() *Table { return c.table.Load() }

// Up reports whether the last refresh succeeded.
func (c *Client) Up() bool { return c.up.Load() }

// Allocatable returns the ids of the devices of the configured resources
// that the kubelet last reported allocatable, sorted; nil if the kubelet
// does not implement GetAllocatableResources, the call failed or the
// kubelet is down. The slice is shared: do not modify it.
func (c *Client) Allocatable() []string {
	if p := c.allocatable.Load(); p != nil {
		return *p
	}
	return nil
}

// refresh makes one List call (and one GetAllocatableResources call where
// supported) and publishes the result. On failure it publishes the empty
// table. A cancelled ctx leaves the state as it was.
func (c *Client) refresh(ctx context.Context) error {
	c.m.refreshes.Inc()
	defer c.logs.Flush(ctx)
	c.codec.take()
	resp, reason, err := c.list(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.m.errors.WithLabelValues(reason).Inc()
		c.setDown(reason, err)
		return err
	}
	if c.state != stateUp {
		// A kubelet that came back may be a newer one: ask again.
		c.allocUnsupported = false
	}
	allocIDs, allocResources := c.fetchAllocatable(ctx)
	t := NewTableDRA(resp, c.cfg.ResourceNames, c.cfg.IDType, c.cfg.DRA).WithAllocatable(allocIDs, c.cfg.IDType)
	c.m.invalidUTF8.Set(float64(c.codec.take() + t.invalidUTF8))
	c.diagnose(t, allocResources)
	c.publish(t)
	c.allocatable.Store(&allocIDs)
	c.setUp(t)
	return nil
}

// list calls List with CallTimeout; reason classifies a failure for the
// errors counter.
func (c *Client) list(ctx context.Context) (resp *podresourcesv1.ListPodResourcesResponse, reason string, err error) {
	if _, err := bounded.Stat(ctx, c.cfg.Socket, c.cfg.CallTimeout); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, reasonDial, fmt.Errorf("%w: %s (is the host's /var/lib/kubelet/pod-resources mounted into the exporter?)", errSocketMissing, c.cfg.Socket)
		}
		return nil, reasonDial, fmt.Errorf("kubelet socket: %w", err)
	}
	if c.state == stateDown {
		// Do not wait out gRPC's own reconnect backoff: ours has run.
		c.conn.ResetConnectBackoff()
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	start := time.Now()
	// WaitForReady: a connection being (re)made counts against CallTimeout
	// instead of failing the call at once.
	resp, err = c.lister.List(cctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	c.m.listDuration.Observe(time.Since(start).Seconds())
	if err == nil {
		return resp, "", nil
	}
	reason = reasonList
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		reason = reasonTimeout
		if c.conn.GetState() != connectivity.Ready {
			reason = reasonDial
		}
	case codes.Unavailable:
		reason = reasonDial
	}
	return nil, reason, fmt.Errorf("kubelet pod-resources List: %w", err)
}

// fetchAllocatable returns the allocatable ids of configured resources and
// every resource name the kubelet reported allocatable.
func (c *Client) fetchAllocatable(ctx context.Context) (ids, resources []string) {
	if c.allocUnsupported {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	resp, err := c.lister.GetAllocatableResources(cctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		if AllocatableUnsupported(err) {
			c.allocUnsupported = true
			if !c.allocUnsupportedLogged {
				c.allocUnsupportedLogged = true
				c.logger.Info("kubelet does not serve GetAllocatableResources (too old, or feature gate KubeletPodResourcesGetAllocatable off); allocatable GPUs and shared replicas unknown", "err", err)
			}
			return nil, nil
		}
		c.m.errors.WithLabelValues(reasonAllocatable).Inc()
		if !c.allocFailing {
			c.allocFailing = true
			c.logs.Warn("GetAllocatableResources failed", "kubelet GetAllocatableResources failed", "err", err)
		}
		return nil, nil
	}
	c.allocUnsupportedLogged = false
	if c.allocFailing {
		c.allocFailing = false
		c.logs.Info("GetAllocatableResources works", "kubelet GetAllocatableResources works again")
	}
	// The codec made the strings valid UTF-8 already; NewTable's check is
	// for responses built in process.
	for _, dev := range resp.GetDevices() {
		resources = append(resources, dev.GetResourceName())
		if MatchResource(c.cfg.ResourceNames, dev.GetResourceName()) {
			ids = append(ids, dev.GetDeviceIds()...)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), resources
}

// allocatableDisabled is the message of the error a kubelet with the
// KubeletPodResourcesGetAllocatable feature gate off answers
// GetAllocatableResources with ("Pod Resources API GetAllocatableResources
// disabled", v1PodResourcesServer.GetAllocatableResources in
// pkg/kubelet/apis/podresources/server_v1.go, kubernetes/kubernetes; the
// gate is beta and on by default from 1.23, GA and locked on from 1.28,
// pkg/features/kube_features.go). It is a plain error, which gRPC sends
// with code Unknown, not Unimplemented.
const allocatableDisabled = "GetAllocatableResources disabled"

// AllocatableUnsupported reports whether err is a kubelet's answer that it
// does not serve GetAllocatableResources: Unimplemented (a kubelet before
// the method existed) or the feature gate's refusal. Neither is a failure:
// the kubelet will answer the same until it is reconfigured.
func AllocatableUnsupported(err error) bool {
	s, ok := status.FromError(err)
	if !ok {
		return false
	}
	return s.Code() == codes.Unimplemented || s.Code() == codes.Unknown && strings.Contains(s.Message(), allocatableDisabled)
}

// diagnose logs what would leave pods without labels: malformed ids and
// resource names that match nothing configured. A situation is logged when
// it appears, and lines are rate-limited per cause (resource and reason, not
// the id), so a kubelet that reports new bad ids on every List costs one
// line per cause per logWindow; the errors counter counts every new id.
func (c *Client) diagnose(t *Table, allocResources []string) {
	seen := make(map[string]bool, len(t.malformed))
	for _, m := range t.malformed {
		key := m.Resource + "\x00" + m.ID
		if seen[key] {
			continue
		}
		seen[key] = true
		if !c.lastMalformed[key] {
			c.m.errors.WithLabelValues(reasonMalformedID).Inc()
			c.logs.Warn("malformed device id: "+m.Resource+": "+m.Reason,
				"kubelet reported a device id that does not parse; not attributed",
				"resource", m.Resource, "id", clip(m.ID, maxLoggedIDLen), "reason", m.Reason,
				"namespace", m.Holder.Namespace, "pod", m.Holder.Pod, "container", m.Holder.Container,
				"id_type", c.cfg.IDType.String())
		}
	}
	c.lastMalformed = seen
	c.diagnoseAllocatable(t.AllocatableMalformed())

	reported := slices.Concat(t.reported, allocResources)
	slices.Sort(reported)
	reported = slices.Compact(reported)
	var ignored []string
	for _, name := range reported {
		if !MatchResource(c.cfg.ResourceNames, name) {
			ignored = append(ignored, name)
		}
	}
	noMatch := ""
	if len(reported) > 0 && len(ignored) == len(reported) {
		noMatch = strings.Join(reported, ",")
	}
	if noMatch != c.lastNoMatch && noMatch != "" {
		c.logs.Warn("no resource matches",
			"no device resource the kubelet reports matches the configured resource names; pods get no GPU labels",
			"configured", c.cfg.ResourceNames, "reported", clipAll(reported))
	}
	c.lastNoMatch = noMatch
	if key := strings.Join(ignored, ","); key != c.lastIgnored {
		c.lastIgnored = key
		if key != "" {
			c.logs.Debug("ignored resources", "ignoring kubelet resources outside the configured names", "resources", clipAll(ignored))
		}
	}
}

// diagnoseAllocatable counts and logs the allocatable ids that do not
// parse, as diagnose does the List's: each new id counts once as a
// malformed_id error, and the line is rate-limited; the replicas of their
// device are not exported while one is malformed (Table.WithAllocatable).
func (c *Client) diagnoseAllocatable(ids []string) {
	var fresh []string
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
		if !c.lastAllocMalformed[id] {
			c.m.errors.WithLabelValues(reasonMalformedID).Inc()
			fresh = append(fresh, id)
		}
	}
	c.lastAllocMalformed = seen
	if len(fresh) > 0 {
		c.logs.Warn("malformed allocatable device id",
			"kubelet listed allocatable device ids that do not parse; replicas of their device not exported",
			"ids", clipAll(fresh), "id_type", c.cfg.IDType.String())
	}
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// maxLoggedNames bounds a list of names in a log line.
const maxLoggedNames = 20

// clipAll clips each name and keeps the first maxLoggedNames, noting how
// many were left out.
func clipAll(names []string) []string {
	out := make([]string, 0, min(len(names), maxLoggedNames+1))
	for i, s := range names {
		if i == maxLoggedNames {
			out = append(out, "… "+strconv.Itoa(len(names)-i)+" more")
			break
		}
		out = append(out, clip(s, maxLoggedIDLen))
	}
	return out
}

// publish makes t current unless the current table has the same content.
func (c *Client) publish(t *Table) {
	if cur := c.table.Load(); !cur.Equal(t) {
		c.table.Store(t)
	}
}

func (c *Client) setUp(t *Table) {
	c.failures = 0
	c.up.Store(true)
	c.m.up.Set(1)
	if c.state != stateUp {
		c.state, c.downCause = stateUp, ""
		c.logs.Info("kubelet connected", "kubelet pod-resources connected; pod attribution on", "allocations", t.Len())
	}
}

// setDown empties the table: pod labels are dropped while the kubelet
// cannot say who holds what. It logs when the state or the cause changes.
func (c *Client) setDown(reason string, err error) {
	c.failures++
	c.publish(c.empty)
	c.allocatable.Store(nil)
	c.up.Store(false)
	c.m.up.Set(0)
	cause := reason
	if errors.Is(err, errSocketMissing) {
		cause = "socket_missing"
	}
	if c.state != stateDown || cause != c.downCause {
		c.state, c.downCause = stateDown, cause
		// Rate-limited per cause: a kubelet that flaps costs one line per
		// cause per logWindow, with the count of the others.
		c.logs.Warn("kubelet unavailable: "+cause, "kubelet pod-resources unavailable; pod attribution off until it answers",
			"reason", cause, "err", err, "retry_in", c.retryDelay())
	}
}

// retryDelay is MinBackoff doubled for each consecutive failure after the
// first, capped at MaxBackoff.
func (c *Client) retryDelay() time.Duration {
	return backoffDelay(c.failures, c.cfg.MinBackoff, c.cfg.MaxBackoff)
}

func backoffDelay(failures int, minDelay, maxDelay time.Duration) time.Duration {
	d := minDelay
	for i := 1; i < failures && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}
