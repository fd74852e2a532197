//go:build cgo && linux

package nvml

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// Library is the NVML API the source calls: go-nvml's nvml.Interface.
type Library = nvml.Interface
