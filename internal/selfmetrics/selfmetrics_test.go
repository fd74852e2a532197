package selfmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func gauge(name string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "h"})
}

// A failure leaves nothing of the set registered; a set that registers can
// be unregistered and registered again.
func TestRegisterAllOrNone(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	if err := reg.Register(gauge("taken")); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, gauge("a"), gauge("b"), gauge("taken")); err == nil {
		t.Fatal("a set with a name already registered registered")
	}
	for _, name := range []string{"a", "b"} {
		if err := reg.Register(gauge(name)); err != nil {
			t.Errorf("%s stayed registered after the set failed: %v", name, err)
		}
	}
	c, d := gauge("c"), gauge("d")
	if err := Register(reg, c, d); err != nil {
		t.Fatal(err)
	}
	Unregister(reg, c, d)
	if err := Register(reg, c, d); err != nil {
		t.Errorf("registering again after Unregister: %v", err)
	}
	if err := Register(nil, c); err != nil {
		t.Errorf("nil registerer: %v", err)
	}
	Unregister(nil, c)
}
