// Package scrapeparse checks rendered pages with the parsers Prometheus
// itself scrapes with (github.com/prometheus/prometheus/model/textparse),
// not only with expfmt. It is a module of its own so that the exporter's
// go.mod does not depend on Prometheus; its version is the one
// tests/tools/prometheus builds the test binaries from.
package scrapeparse
