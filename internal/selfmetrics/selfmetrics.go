// Package selfmetrics registers a package's own metrics all or none.
package selfmetrics

import "github.com/prometheus/client_golang/prometheus"

// Register registers cs on reg in order. When one fails, those registered
// before it are unregistered again and its error is returned, so a package
// that cannot start leaves nothing behind. A nil reg registers nothing.
func Register(reg prometheus.Registerer, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			Unregister(reg, cs[:i]...)
			return err
		}
	}
	return nil
}

// Unregister unregisters cs from reg; a nil reg or a collector not
// registered is no error.
func Unregister(reg prometheus.Registerer, cs ...prometheus.Collector) {
	if reg == nil {
		return
	}
	for _, c := range cs {
		reg.Unregister(c)
	}
}
