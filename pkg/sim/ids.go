package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// derivedID formats a stable, UUID-shaped id ("8-4-4-4-12" hex digits) from
// the scenario name and the parts that identify the object, so that ids do
// not change between runs or between scenario edits elsewhere in the file.
func derivedID(prefix string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte("gpu-exporter/sim"))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	x := hex.EncodeToString(h.Sum(nil)[:16])
	return prefix + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

func gpuUUID(scenario string, gpu int) string {
	return derivedID("GPU-", scenario, "gpu", strconv.Itoa(gpu))
}

func migUUID(scenario string, gpu, instance int) string {
	return derivedID("MIG-", scenario, "mig", strconv.Itoa(gpu), strconv.Itoa(instance))
}

func podUID(scenario string, index int, namespace, name string) string {
	return derivedID("", scenario, "pod", strconv.Itoa(index), namespace, name)
}

// hgxBuses are the PCI buses of the eight GPUs on an HGX H100 baseboard.
const hgxBuses = "\x18\x2a\x3a\x5d\x9a\xab\xba\xdb"

// pciBusID places GPU i like an HGX board: eight per PCI domain.
func pciBusID(gpu int) string {
	return fmt.Sprintf("%08X:%02X:00.0", gpu/len(hgxBuses), hgxBuses[gpu%len(hgxBuses)])
}

func migCIUUID(scenario string, gpu, instance, ci int) string {
	return derivedID("MIG-", scenario, "mig", strconv.Itoa(gpu), strconv.Itoa(instance), "ci", strconv.Itoa(ci))
}
