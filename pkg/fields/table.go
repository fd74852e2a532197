package fields

// Scales from DCGM's native units to base units.
const (
	percent   = 0.01    // % -> ratio 0..1
	kibibytes = 1 << 10 // KiB -> bytes
	mebibytes = 1 << 20 // MiB -> bytes
	megahertz = 1e6     // MHz -> Hz
	millijoul = 1e-3    // mJ -> J
	nanosec   = 1e-9    // ns -> s
	one       = 1.0     // already in base units
)

const (
	gpuOnly = LevelGPU
	gpuOrGI = LevelGPU | LevelGPUInstance
)

// clockEventReasons are DCGM_CLOCKS_EVENT_REASON_* bits (dcgm_fields.h),
// with our reason label and the clock_event label dcgm-exporter uses.
func clockEventReasons() []Reason {
	return []Reason{
		{0x1, "gpu_idle", "gpu_idle"},
		{0x2, "clocks_setting", "clocks_setting"},
		{0x4, "sw_power_cap", "power_cap"},
		{0x8, "hw_slowdown", "hw_slowdown"},
		{0x10, "sync_boost", "sync_boost"},
		{0x20, "sw_thermal", "sw_thermal"},
		{0x40, "hw_thermal", "hw_thermal"},
		{0x80, "hw_power_brake", "hw_power_brake"},
		{0x100, "display_clocks", "display_clocks"},
	}
}

// table is the catalog, in exposition order. Field ids and DCGM names come
// from dcgm_fields.h; dcgm-exporter's types come from its default counters.
func table() []Field {
	return []Field{
		// Clocks.
		{ID: 100, DCGMName: "DCGM_FI_DEV_SM_CLOCK", Name: "gpu_sm_clock_hertz", Type: Gauge, DCGMType: Gauge, Scale: megahertz, Unit: "hertz",
			DCGMHelp: "SM clock frequency in MHz.",
			Help:     "SM clock frequency in hertz.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 101, DCGMName: "DCGM_FI_DEV_MEM_CLOCK", Name: "gpu_memory_clock_hertz", Type: Gauge, DCGMType: Gauge, Scale: megahertz, Unit: "hertz",
			DCGMHelp: "Memory clock frequency in MHz.",
			Help:     "Memory clock frequency in hertz.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 112, DCGMName: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", Name: "gpu_clock_event_active", Type: Gauge, DCGMType: Gauge, Scale: one,
			DCGMHelp: "Active clock event (throttle) reasons as a bitmask of DCGM_CLOCKS_EVENT_REASON_* bits (0: none).",
			Help:     "Whether a clock event (throttle) reason is active: 1 active, 0 not.", Levels: gpuOnly, Default: true, Kind: Bitmask, Reasons: clockEventReasons()},

		// Temperatures.
		{ID: 140, DCGMName: "DCGM_FI_DEV_MEMORY_TEMP", Name: "gpu_memory_temperature_celsius", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "celsius",
			Help: "Memory temperature in degrees Celsius.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 150, DCGMName: "DCGM_FI_DEV_GPU_TEMP", Name: "gpu_temperature_celsius", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "celsius",
			Help: "GPU temperature in degrees Celsius.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 158, DCGMName: "DCGM_FI_DEV_SLOWDOWN_TEMP", Name: "gpu_temperature_slowdown_celsius", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "celsius",
			Help: "GPU temperature at which the GPU slows its clocks, in degrees Celsius.", Levels: gpuOnly, Default: true},
		{ID: 159, DCGMName: "DCGM_FI_DEV_SHUTDOWN_TEMP", Name: "gpu_temperature_shutdown_celsius", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "celsius",
			Help: "GPU temperature at which the GPU shuts down, in degrees Celsius.", Levels: gpuOnly},

		// Power and energy.
		{ID: 155, DCGMName: "DCGM_FI_DEV_POWER_USAGE", Name: "gpu_power_watts", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "watts",
			Help: "Board power draw in watts.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 156, DCGMName: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Name: "gpu_energy_joules_total", Type: Counter, DCGMType: Counter, Scale: millijoul, Unit: "joules",
			DCGMHelp: "Energy consumed by the GPU since the driver was last loaded, in mJ.",
			Help:     "Energy consumed by the GPU since the driver was last loaded, in joules.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 160, DCGMName: "DCGM_FI_DEV_POWER_MGMT_LIMIT", Name: "gpu_power_limit_watts", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "watts",
			Help: "Power management limit in watts.", Levels: gpuOnly, Default: true},
		{ID: 164, DCGMName: "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", Name: "gpu_power_enforced_limit_watts", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "watts",
			Help: "Power limit the driver enforces, in watts.", Levels: gpuOnly},

		// PCIe.
		{ID: 202, DCGMName: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Name: "gpu_pcie_replays_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "PCIe replays (retries) since the driver was last loaded.", Levels: gpuOnly, Default: true, DCGMDefault: true},

		// Utilization.
		{ID: 203, DCGMName: "DCGM_FI_DEV_GPU_UTIL", Name: "gpu_utilization_ratio", Type: Gauge, DCGMType: Gauge, Scale: percent, Unit: "ratio",
			DCGMHelp: "Share of the last sample period during which a kernel ran on the GPU, in percent (0-100).",
			Help:     "Fraction of the last sample period during which a kernel ran on the GPU (0-1).", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 204, DCGMName: "DCGM_FI_DEV_MEM_COPY_UTIL", Name: "gpu_memory_copy_utilization_ratio", Type: Gauge, DCGMType: Gauge, Scale: percent, Unit: "ratio",
			DCGMHelp: "Share of the last sample period during which device memory was read or written, in percent (0-100).",
			Help:     "Fraction of the last sample period during which device memory was read or written (0-1).", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 206, DCGMName: "DCGM_FI_DEV_ENC_UTIL", Name: "gpu_encoder_utilization_ratio", Type: Gauge, DCGMType: Gauge, Scale: percent, Unit: "ratio",
			DCGMHelp: "Video encoder utilization in percent (0-100).",
			Help:     "Video encoder utilization (0-1).", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 207, DCGMName: "DCGM_FI_DEV_DEC_UTIL", Name: "gpu_decoder_utilization_ratio", Type: Gauge, DCGMType: Gauge, Scale: percent, Unit: "ratio",
			DCGMHelp: "Video decoder utilization in percent (0-100).",
			Help:     "Video decoder utilization (0-1).", Levels: gpuOnly, Default: true, DCGMDefault: true},

		// Errors and violations.
		{ID: 230, DCGMName: "DCGM_FI_DEV_XID_ERRORS", Name: "gpu_xid_last_error", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "Code of the last XID error the driver reported for the GPU (0: none since the driver was loaded).", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 240, DCGMName: "DCGM_FI_DEV_POWER_VIOLATION", Name: "gpu_power_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Time the GPU spent throttled by its power limit, as DCGM's violation counter reports it.",
			Help:     "Time the GPU spent throttled by its power limit, in seconds.", Levels: gpuOnly},
		{ID: 241, DCGMName: "DCGM_FI_DEV_THERMAL_VIOLATION", Name: "gpu_thermal_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Time the GPU spent throttled by thermal limits, as DCGM's violation counter reports it.",
			Help:     "Time the GPU spent throttled by thermal limits, in seconds.", Levels: gpuOnly},
		// 242-245 (dcgm_fields.h): NVML's perf-policy violation times
		// (DCGM dcgm_fields.cpp maps them to NVML_FI_DEV_PERF_POLICY_*), in
		// ns as for 240/241; dcgm-exporter's default-counters.csv lists them
		// commented out, as counters "(in ns)".
		{ID: 242, DCGMName: "DCGM_FI_DEV_SYNC_BOOST_VIOLATION", Name: "gpu_sync_boost_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Throttling duration due to sync-boost constraints (in ns).",
			Help:     "Time the GPU spent throttled by sync boost (held to the clocks of its sync-boost group), in seconds.", Levels: gpuOnly},
		{ID: 243, DCGMName: "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", Name: "gpu_board_limit_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Throttling duration due to board limit constraints (in ns).",
			Help:     "Time the GPU spent throttled by board limits, in seconds.", Levels: gpuOnly},
		{ID: 244, DCGMName: "DCGM_FI_DEV_LOW_UTIL_VIOLATION", Name: "gpu_low_utilization_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Throttling duration due to low utilization (in ns).",
			Help:     "Time the GPU spent at lowered clocks because of low utilization, in seconds.", Levels: gpuOnly},
		{ID: 245, DCGMName: "DCGM_FI_DEV_RELIABILITY_VIOLATION", Name: "gpu_reliability_violation_seconds_total", Type: Counter, DCGMType: Counter, Scale: nanosec, Unit: "seconds",
			DCGMHelp: "Throttling duration due to reliability constraints (in ns).",
			Help:     "Time the GPU spent throttled by reliability limits, in seconds.", Levels: gpuOnly},

		// vGPU licence (526): DCGM reads it on the GPU with
		// nvmlDeviceGetGridLicensableFeatures and stores 1 when the vGPU
		// feature is licensed, 0 when not or when the GPU does not support
		// licensing (DCGM dcgmlib/src/DcgmCacheManager.cpp, case
		// DCGM_FI_DEV_VGPU_LICENSE_STATUS). dcgm-exporter's
		// default-counters.csv collects it (tag 4.5.3-4.8.2).
		{ID: 526, DCGMName: "DCGM_FI_DEV_VGPU_LICENSE_STATUS", Name: "gpu_vgpu_licensed", Type: Gauge, DCGMType: Gauge, Scale: one,
			DCGMHelp: "vGPU License status",
			Help:     "Whether the vGPU software licence is held: 1 licensed, 0 not licensed or licensing not supported.", Levels: gpuOnly, DCGMDefault: true},

		// Framebuffer memory.
		{ID: 250, DCGMName: "DCGM_FI_DEV_FB_TOTAL", Name: "gpu_memory_total_bytes", Type: Gauge, DCGMType: Gauge, Scale: mebibytes, Unit: "bytes",
			DCGMHelp: "Total framebuffer memory in MiB.",
			Help:     "Total framebuffer memory in bytes.", Levels: gpuOrGI, Default: true},
		{ID: 251, DCGMName: "DCGM_FI_DEV_FB_FREE", Name: "gpu_memory_free_bytes", Type: Gauge, DCGMType: Gauge, Scale: mebibytes, Unit: "bytes",
			DCGMHelp: "Free framebuffer memory in MiB.",
			Help:     "Free framebuffer memory in bytes.", Levels: gpuOrGI, Default: true, DCGMDefault: true},
		{ID: 252, DCGMName: "DCGM_FI_DEV_FB_USED", Name: "gpu_memory_used_bytes", Type: Gauge, DCGMType: Gauge, Scale: mebibytes, Unit: "bytes",
			DCGMHelp: "Used framebuffer memory in MiB.",
			Help:     "Used framebuffer memory in bytes.", Levels: gpuOrGI, Default: true, DCGMDefault: true},
		{ID: 253, DCGMName: "DCGM_FI_DEV_FB_RESERVED", Name: "gpu_memory_reserved_bytes", Type: Gauge, DCGMType: Gauge, Scale: mebibytes, Unit: "bytes",
			DCGMHelp: "Framebuffer memory reserved by the driver, in MiB.",
			Help:     "Framebuffer memory reserved by the driver, in bytes.", Levels: gpuOrGI, DCGMDefault: true},

		// ECC.
		{ID: 310, DCGMName: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Name: "gpu_ecc_single_bit_volatile_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Single-bit (corrected) ECC errors since the driver was last loaded.", Levels: gpuOnly, Default: true},
		{ID: 311, DCGMName: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Name: "gpu_ecc_double_bit_volatile_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Double-bit (uncorrected) ECC errors since the driver was last loaded.", Levels: gpuOnly, Default: true},
		{ID: 312, DCGMName: "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", Name: "gpu_ecc_single_bit_aggregate_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Single-bit (corrected) ECC errors over the life of the GPU.", Levels: gpuOnly, Default: true},
		{ID: 313, DCGMName: "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", Name: "gpu_ecc_double_bit_aggregate_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Double-bit (uncorrected) ECC errors over the life of the GPU.", Levels: gpuOnly, Default: true},

		// Retired pages and remapped rows.
		{ID: 390, DCGMName: "DCGM_FI_DEV_RETIRED_SBE", Name: "gpu_retired_pages_single_bit_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Memory pages retired for multiple single-bit ECC errors.", Levels: gpuOnly, Default: true},
		{ID: 391, DCGMName: "DCGM_FI_DEV_RETIRED_DBE", Name: "gpu_retired_pages_double_bit_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Memory pages retired for a double-bit ECC error.", Levels: gpuOnly, Default: true},
		{ID: 392, DCGMName: "DCGM_FI_DEV_RETIRED_PENDING", Name: "gpu_retired_pages_pending", Type: Gauge, DCGMType: Counter, Scale: one,
			Help: "Memory pages waiting to be retired at the next driver reload.", Levels: gpuOnly, Default: true},
		{ID: 393, DCGMName: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Name: "gpu_remapped_rows_uncorrectable_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Memory rows remapped for uncorrectable errors.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 394, DCGMName: "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Name: "gpu_remapped_rows_correctable_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Memory rows remapped for correctable errors.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 395, DCGMName: "DCGM_FI_DEV_ROW_REMAP_FAILURE", Name: "gpu_row_remap_failure", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "Whether a memory row remapping failed: 1 failed, 0 not.", Levels: gpuOnly, Default: true, DCGMDefault: true},
		{ID: 396, DCGMName: "DCGM_FI_DEV_ROW_REMAP_PENDING", Name: "gpu_row_remap_pending", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "Whether a memory row remapping waits for a GPU reset: 1 pending, 0 not.", Levels: gpuOnly, Default: true},

		// Recovery. DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION (DCGM 4.5; DCGM 4.6
		// renames it DCGM_FI_DEV_GPU_RECOVERY_ACTION) reports NVML's
		// nvmlDeviceGpuRecoveryAction_t; values 5-7 come from newer nvml.h.
		{ID: 1523, DCGMName: "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION", Name: "gpu_recovery_action", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "Recovery action the driver asks for: 0 none, 1 GPU reset, 2 node reboot, 3 drain peer-to-peer traffic, 4 drain and reset, " +
				"5 recover the IMEX domain, 6 PCIe bus reset, 7 system reboot.", Levels: gpuOnly, Default: true},

		// NVLink.
		{ID: 449, DCGMName: "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Name: "gpu_nvlink_data_bytes_total", Type: Counter, DCGMType: Counter, Scale: kibibytes, Unit: "bytes",
			// DCGM adds NVML's NVLINK_THROUGHPUT_DATA_TX and _RX counters
			// (DcgmCacheManager ReadAndCacheNvLinkBandwidth), which nvml.h
			// gives in KiB.
			DCGMHelp: "NVLink data counter for all lanes, as DCGM reports it (KiB).",
			Help:     "NVLink payload data sent and received over all links, in bytes.", Levels: gpuOnly | LevelNVLink, DCGMDefault: true},
		// Per-link traffic: DCGM reads these with the same NVML throughput
		// counters as DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, one direction each
		// (DcgmCacheManager ReadAndCacheNvLinkBandwidth, DcgmcmDirectionTx/Rx),
		// so in KiB. On a link entity (dcgm_structs.h dcgm_link_t) the value
		// is the link's own.
		{ID: 843, DCGMName: "DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_TOTAL", Name: "gpu_nvlink_transmit_bytes_total", Type: Counter, DCGMType: Counter, Scale: kibibytes, Unit: "bytes",
			DCGMHelp: "NVLink data transmitted, as DCGM reports it (KiB).",
			Help:     "NVLink payload data transmitted, in bytes; per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},
		{ID: 897, DCGMName: "DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_TOTAL", Name: "gpu_nvlink_receive_bytes_total", Type: Counter, DCGMType: Counter, Scale: kibibytes, Unit: "bytes",
			DCGMHelp: "NVLink data received, as DCGM reports it (KiB).",
			Help:     "NVLink payload data received, in bytes; per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},
		// Link 0's data counter (440, DCGM_FI_DEV_NVLINK_BANDWIDTH_L0, DCGM
		// 4.6 DCGM_FI_DEV_NVLINK_THROUGHPUT_L0): DCGM reads it with the same
		// NVML throughput counters as the total, both directions, for link 0
		// (DcgmCacheManager.cpp ReadAndCacheNvLinkBandwidth), so in KiB.
		// dcgm-exporter's files list it commented out, as a counter.
		{ID: 440, DCGMName: "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", Name: "gpu_nvlink_link0_data_bytes_total", Type: Counter, DCGMType: Counter, Scale: kibibytes, Unit: "bytes",
			DCGMHelp: "The number of bytes of active NVLink rx or tx data including both header and payload.",
			Help:     "NVLink payload data sent and received over link 0, in bytes.", Levels: gpuOnly},
		// Error counters: dcgm-exporter's counters files name them
		// DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL (ids 409/419/429/439,
		// dcgm_fields.h DCGM_FI_DEV_NVLINK_*_ERROR_TOTAL).
		{ID: 409, DCGMName: "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", Name: "gpu_nvlink_crc_flit_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "NVLink flow-control (flit) CRC errors; per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},
		{ID: 419, DCGMName: "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", Name: "gpu_nvlink_crc_data_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "NVLink data CRC errors; per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},
		{ID: 429, DCGMName: "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", Name: "gpu_nvlink_replay_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "NVLink replays (retransmissions); per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},
		{ID: 439, DCGMName: "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", Name: "gpu_nvlink_recovery_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "NVLink recoveries (link retraining); per link on link series.", Levels: gpuOnly | LevelNVLink, Default: true, Fabric: true},

		// Fabric manager (dcgm_fields.h 170/171; the status is a
		// dcgmFabricManagerStatus_t of dcgm_structs.h).
		{ID: 170, DCGMName: "DCGM_FI_DEV_FABRIC_MANAGER_STATUS", Name: "gpu_fabric_manager_status", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help:   "Fabric manager state for the GPU: 0 not supported, 1 not started, 2 in progress, 3 success, 4 failure, 5 unrecognized, 6 NVML too old.",
			Levels: gpuOnly, Default: true, Fabric: true},
		{ID: 171, DCGMName: "DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE", Name: "gpu_fabric_manager_error_code", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "Error the fabric manager reported for the GPU when it finished starting (0: none).", Levels: gpuOnly, Default: true, Fabric: true},

		// NVSwitch (dcgm_fields.h 856-870; DCGM's field table gives 858,
		// 861 and 862 the switch level and 780-783 and 870 the link level).
		{ID: 858, DCGMName: "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", Name: "nvswitch_temperature_celsius", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "celsius",
			Help: "NVSwitch temperature in degrees Celsius.", Levels: LevelNVSwitch, Default: true, Fabric: true},
		// DCGM's field table gives the switch throughput no unit; NSCQ
		// counts bytes.
		{ID: 861, DCGMName: "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", Name: "nvswitch_transmit_bytes_total", Type: Counter, DCGMType: Counter, Scale: one, Unit: "bytes",
			Help: "Data the NVSwitch transmitted, in bytes.", Levels: LevelNVSwitch, Default: true, Fabric: true},
		{ID: 862, DCGMName: "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_RX", Name: "nvswitch_receive_bytes_total", Type: Counter, DCGMType: Counter, Scale: one, Unit: "bytes",
			Help: "Data the NVSwitch received, in bytes.", Levels: LevelNVSwitch, Default: true, Fabric: true},
		{ID: 856, DCGMName: "DCGM_FI_DEV_SXID_FATAL_ERROR", Name: "nvswitch_fatal_error_last_sxid", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "SXid of the last fatal error the NVSwitch reported (0: none).", Levels: LevelNVSwitch, Default: true, Fabric: true},
		{ID: 857, DCGMName: "DCGM_FI_DEV_SXID_NON_FATAL_ERROR", Name: "nvswitch_non_fatal_error_last_sxid", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "SXid of the last non-fatal error the NVSwitch reported (0: none).", Levels: LevelNVSwitch, Default: true, Fabric: true},
		{ID: 782, DCGMName: "DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS", Name: "nvswitch_link_fatal_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Fatal errors on an NVSwitch port.", Levels: LevelNVLink, Default: true, Fabric: true},
		{ID: 783, DCGMName: "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS", Name: "nvswitch_link_non_fatal_errors_total", Type: Counter, DCGMType: Counter, Scale: one,
			Help: "Non-fatal errors on an NVSwitch port.", Levels: LevelNVLink, Default: true, Fabric: true},
		{ID: 780, DCGMName: "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX", Name: "nvswitch_link_transmit_bytes_total", Type: Counter, DCGMType: Counter, Scale: one, Unit: "bytes",
			Help: "Data an NVSwitch port transmitted, in bytes.", Levels: LevelNVLink, Default: true, Fabric: true},
		{ID: 781, DCGMName: "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX", Name: "nvswitch_link_receive_bytes_total", Type: Counter, DCGMType: Counter, Scale: one, Unit: "bytes",
			Help: "Data an NVSwitch port received, in bytes.", Levels: LevelNVLink, Default: true, Fabric: true},
		{ID: 870, DCGMName: "DCGM_FI_DEV_NVSWITCH_LINK_STATUS", Name: "nvswitch_link_status", Type: Gauge, DCGMType: Gauge, Scale: one,
			Help: "State of an NVSwitch port: -1 unknown, 0 off, 1 safe, 2 active, 3 error.", Levels: LevelNVLink, Default: true, Fabric: true},

		// Profiling (DCP) fields.
		{ID: 1001, DCGMName: "DCGM_FI_PROF_GR_ENGINE_ACTIVE", Name: "gpu_graphics_engine_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of time the graphics or compute engine was active (0-1); reported per MIG instance.", Levels: gpuOrGI, Profiling: true, Default: true, DCGMDefault: true},
		{ID: 1002, DCGMName: "DCGM_FI_PROF_SM_ACTIVE", Name: "gpu_sm_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles an SM had at least one warp assigned, averaged over SMs (0-1).", Levels: gpuOrGI, Profiling: true, Default: true},
		{ID: 1003, DCGMName: "DCGM_FI_PROF_SM_OCCUPANCY", Name: "gpu_sm_occupancy_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of resident warps on an SM relative to its maximum, averaged over SMs (0-1).", Levels: gpuOrGI, Profiling: true, Default: true},
		{ID: 1004, DCGMName: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Name: "gpu_tensor_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles the tensor pipes were active (0-1).", Levels: gpuOrGI, Profiling: true, Default: true, DCGMDefault: true},
		{ID: 1005, DCGMName: "DCGM_FI_PROF_DRAM_ACTIVE", Name: "gpu_dram_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles the device memory interface was sending or receiving data (0-1).", Levels: gpuOrGI, Profiling: true, Default: true, DCGMDefault: true},
		{ID: 1006, DCGMName: "DCGM_FI_PROF_PIPE_FP64_ACTIVE", Name: "gpu_fp64_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles the FP64 pipe was active (0-1).", Levels: gpuOrGI, Profiling: true, Default: true},
		{ID: 1007, DCGMName: "DCGM_FI_PROF_PIPE_FP32_ACTIVE", Name: "gpu_fp32_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles the FP32 pipe was active (0-1).", Levels: gpuOrGI, Profiling: true, Default: true},
		{ID: 1008, DCGMName: "DCGM_FI_PROF_PIPE_FP16_ACTIVE", Name: "gpu_fp16_active_ratio", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "ratio",
			Help: "Fraction of cycles the FP16 pipe was active (0-1).", Levels: gpuOrGI, Profiling: true, Default: true},
		{ID: 1009, DCGMName: "DCGM_FI_PROF_PCIE_TX_BYTES", Name: "gpu_pcie_transmit_bytes_per_second", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "bytes_per_second",
			Help: "PCIe transmit rate, headers and payload, in bytes per second.", Levels: gpuOnly, Profiling: true, Default: true, DCGMDefault: true},
		{ID: 1010, DCGMName: "DCGM_FI_PROF_PCIE_RX_BYTES", Name: "gpu_pcie_receive_bytes_per_second", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "bytes_per_second",
			Help: "PCIe receive rate, headers and payload, in bytes per second.", Levels: gpuOnly, Profiling: true, Default: true, DCGMDefault: true},
		{ID: 1011, DCGMName: "DCGM_FI_PROF_NVLINK_TX_BYTES", Name: "gpu_nvlink_transmit_bytes_per_second", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "bytes_per_second",
			Help: "NVLink transmit rate, headers and payload, in bytes per second.", Levels: gpuOnly | LevelNVLink, Profiling: true, Default: true},
		{ID: 1012, DCGMName: "DCGM_FI_PROF_NVLINK_RX_BYTES", Name: "gpu_nvlink_receive_bytes_per_second", Type: Gauge, DCGMType: Gauge, Scale: one, Unit: "bytes_per_second",
			Help: "NVLink receive rate, headers and payload, in bytes per second.", Levels: gpuOnly | LevelNVLink, Profiling: true, Default: true},
	}
}
