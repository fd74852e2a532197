module github.com/gpu-exporter/gpu-exporter

go 1.26.8

require (
	github.com/NVIDIA/go-dcgm v1.4611.0 // indirect
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/common v0.74.0 // indirect
	github.com/prometheus/exporter-toolkit v0.20.0 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	k8s.io/kubelet v0.37.2 // indirect
)
