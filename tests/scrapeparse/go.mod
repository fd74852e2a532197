module github.com/gpu-exporter/gpu-exporter/tests/scrapeparse

go 1.26.8

require (
	github.com/gpu-exporter/gpu-exporter v0.0.0
	github.com/prometheus/common v0.74.0
	github.com/prometheus/prometheus v0.316.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/grafana/regexp v0.0.0-20250905093917-f7b3be9d1853 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/pandatix/go-abnf v0.5.5 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/gpu-exporter/gpu-exporter => ../..
