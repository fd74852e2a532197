//go:build !(cgo && linux)

package nvml

// Library is the NVML API the source calls. go-nvml needs cgo on linux; in
// this build no library can be used and any value is ignored.
type Library any
