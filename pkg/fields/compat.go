package fields

// Field ids the renderer treats specially in dcgm naming.
const (
	// ClockEventReasonsID is DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, the bitmask
	// dcgm-exporter's DCGM_EXP_CLOCK_EVENTS_COUNT counts.
	ClockEventReasonsID uint16 = 112
	// XIDErrorsID is DCGM_FI_DEV_XID_ERRORS, which dcgm-exporter labels with
	// err_code and err_msg.
	XIDErrorsID uint16 = 230
	// DriverVersionID is DCGM_FI_DRIVER_VERSION, a label field; when a
	// source does not read it the inventory's driver version stands in.
	DriverVersionID uint16 = 1
)

// Names of dcgm-exporter's own counters (DCGM_EXP_*), which counters files
// list next to DCGM fields.
const (
	// XIDErrorsCountName counts XID errors per GPU and code over a window.
	XIDErrorsCountName = "DCGM_EXP_XID_ERRORS_COUNT"
	// ClockEventsCountName counts samples with each clock event reason
	// active per GPU over a window.
	ClockEventsCountName = "DCGM_EXP_CLOCK_EVENTS_COUNT"
	// GPUHealthStatusName is the result of each of DCGM's health watches
	// per GPU.
	GPUHealthStatusName = "DCGM_EXP_GPU_HEALTH_STATUS"
	// P2PStatusName is the NVLink P2P status of each ordered pair of GPUs.
	P2PStatusName = "DCGM_EXP_P2P_STATUS"
)

// labelTable lists DCGM string fields that counters files name as "label"
// rows. They are facts, not metrics: in dcgm naming their value labels every
// series of the entity; they are not part of All. They are read per GPU; a
// MIG instance takes its GPU's values.
func labelTable() []Field {
	return []Field{
		{ID: DriverVersionID, DCGMName: "DCGM_FI_DRIVER_VERSION",
			Help: "NVIDIA driver version.", DCGMDefault: true, Levels: gpuOnly, Kind: Label},
		{ID: 2, DCGMName: "DCGM_FI_NVML_VERSION",
			Help: "NVML library version.", Levels: gpuOnly, Kind: Label},
		{ID: 51, DCGMName: "DCGM_FI_DEV_BRAND",
			Help: "Product brand of the GPU.", Levels: gpuOnly, Kind: Label},
		{ID: 53, DCGMName: "DCGM_FI_DEV_SERIAL",
			Help: "Board serial number.", Levels: gpuOnly, Kind: Label},
		{ID: 56, DCGMName: "DCGM_FI_DEV_OEM_INFOROM_VER",
			Help: "InfoROM OEM object version.", Levels: gpuOnly, Kind: Label},
		{ID: 80, DCGMName: "DCGM_FI_DEV_ECC_INFOROM_VER",
			Help: "InfoROM ECC object version.", Levels: gpuOnly, Kind: Label},
		{ID: 81, DCGMName: "DCGM_FI_DEV_POWER_INFOROM_VER",
			Help: "InfoROM power management object version.", Levels: gpuOnly, Kind: Label},
		{ID: 82, DCGMName: "DCGM_FI_DEV_INFOROM_IMAGE_VER",
			Help: "InfoROM image version.", Levels: gpuOnly, Kind: Label},
		{ID: 85, DCGMName: "DCGM_FI_DEV_VBIOS_VERSION",
			Help: "VBIOS version.", Levels: gpuOnly, Kind: Label},
	}
}

// notExportedTable lists names dcgm-exporter's shipped counters files use
// for things gpu-exporter does not export, with the reason. Counters-file
// rows naming them are skipped with that reason so that the files still
// load. Names are upper case (lookups ignore case): DCGM_SYNC_BOOST_VIOLATION
// is the 1.x name dcgm_sync_boost_violation. A DCGM field name missing here
// and from the catalog is skipped too, with a generic reason
// (Catalog.DCGMFieldID); this list gives the better one.
func notExportedTable() []struct {
	names  []string
	reason string
} {
	return []struct {
		names  []string
		reason string
	}{
		{[]string{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_PCIE_TX_THROUGHPUT"}, "use DCGM_FI_PROF_PCIE_TX_BYTES"},
		{[]string{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "DCGM_PCIE_RX_THROUGHPUT"}, "use DCGM_FI_PROF_PCIE_RX_BYTES"},
	}
}

// NotExported reports whether name (any case) is one that dcgm-exporter's
// counters files use for something gpu-exporter does not export, and why.
func NotExported(name string) (reason string, ok bool) {
	key := nameKey(name)
	for _, row := range notExportedTable() {
		for _, n := range row.names {
			if n == key {
				return row.reason, true
			}
		}
	}
	return "", false
}
