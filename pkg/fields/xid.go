package fields

import "strconv"

// XIDMessage returns the name NVIDIA's XID error catalog gives an XID code,
// which dcgm-exporter exports as the err_msg label of DCGM_FI_DEV_XID_ERRORS
// (err_code is the code itself). Codes past the catalog read "Unknown Error".
func XIDMessage(code int64) string {
	switch code {
	case 0:
		return "No Error"
	case 1, 2, 3, 4, 6, 11, 32:
		return "Invalid or corrupted push buffer stream"
	case 5, 10, 14, 15, 17, 23, 39, 40, 41, 49, 50, 51, 52, 53, 55:
		return "Unused"
	case 7:
		return "Invalid or corrupted push buffer address"
	case 8, 43, 46:
		return "GPU stopped processing"
	case 9:
		return "Driver error programming GPU"
	case 12:
		return "Driver error handling GPU exception"
	case 13:
		return "Graphics Engine Exception"
	case 16:
		return "Display engine hung"
	case 18:
		return "Bus mastering disabled in PCI Config Space"
	case 19, 56:
		return "Display Engine error"
	case 20:
		return "Invalid or corrupted Mpeg push buffer"
	case 21:
		return "Invalid or corrupted Motion Estimation push buffer"
	case 22:
		return "Invalid or corrupted Video Processor push buffer"
	case 24:
		return "GPU semaphore timeout"
	case 25:
		return "Invalid or illegal push buffer stream"
	case 26:
		return "Framebuffer timeout"
	case 27, 28, 29, 34, 35, 36, 42, 47, 60, 65:
		return "Video processor exception"
	case 30:
		return "GPU semaphore access error"
	case 31:
		return "GPU memory page fault"
	case 33, 59:
		return "Internal micro-controller error"
	case 37, 38:
		return "Driver firmware error"
	case 44:
		return "Graphics Engine fault during context switch"
	case 45:
		return "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda"
	case 48:
		return "Double Bit ECC Error"
	case 54:
		return "Auxiliary power is not connected to the GPU board"
	case 57:
		return "Error programming video memory interface"
	case 58:
		return "Unstable video memory interface detected"
	case 61:
		return "Internal micro-controller breakpoint/warning"
	case 62, 169:
		return "Internal micro-controller halt"
	case 63:
		return "ECC page retirement or row remapping recording event"
	case 64:
		return "ECC page retirement or row remapper recording failure"
	case 66, 67:
		return "Illegal access by driver"
	case 68:
		return "NVDEC0 Exception"
	case 69:
		return "Graphics Engine class error"
	case 70, 71, 72:
		return "CE" + strconv.FormatInt(code-67, 10) + ": Unknown Error"
	case 73:
		return "NVENC2 Error"
	case 74:
		return "NVLINK Error"
	case 75, 76, 77:
		return "CE" + strconv.FormatInt(code-69, 10) + ": Unknown Error"
	case 78:
		return "vGPU Start Error"
	case 79:
		return "GPU has fallen off the bus"
	case 80:
		return "Corrupted data sent to GPU"
	case 81:
		return "VGA Subsystem Error"
	case 82:
		return "NVJPG0 Error"
	case 83, 84:
		return "NVDEC" + strconv.FormatInt(code-82, 10) + " Error"
	case 85:
		return "CE9: Unknown Error"
	case 86:
		return "OFA Exception"
	case 87, 90, 91, 108:
		return "Reserved"
	case 88, 89:
		return "NVDEC" + strconv.FormatInt(code-85, 10) + " Error"
	case 92:
		return "High single-bit ECC error rate"
	case 93:
		return "Non-fatal violation of provisioned InfoROM wear limit"
	case 94:
		return "Contained ECC error"
	case 95:
		return "Uncontained ECC error"
	case 96, 97, 98:
		return "NVDEC" + strconv.FormatInt(code-91, 10) + " Error"
	case 99, 100, 101, 102, 103, 104, 105:
		return "NVJPG" + strconv.FormatInt(code-98, 10) + " Error"
	case 106:
		return "SMBPBI Test Message"
	case 107:
		return "SMBPBI Test Message Silent"
	case 109:
		return "Context Switch Timeout Error"
	case 110:
		return "Security Fault Error"
	case 111:
		return "Display Bundle Error Event"
	case 112:
		return "Display Supervisor Error"
	case 113:
		return "DP Link Training Error"
	case 114:
		return "Display Pipeline Underflow Error"
	case 115:
		return "Display Core Channel Error"
	case 116:
		return "Display Window Channel Error"
	case 117:
		return "Display Cursor Channel Error"
	case 118:
		return "Display Pixel Pipeline Error"
	case 119:
		return "GSP RPC Timeout"
	case 120:
		return "GSP Error"
	case 121:
		return "C2C Link Error"
	case 122:
		return "SPI PMU RPC Read Failure"
	case 123:
		return "SPI PMU RPC Write Failure"
	case 124:
		return "SPI PMU RPC Erase Failure"
	case 125:
		return "Inforom FS Failure"
	case 126, 127, 128, 129, 130, 131, 132, 133, 134, 135:
		return "Robust Channel CE" + strconv.FormatInt(code-116, 10) + " Error"
	case 136:
		return "ALI Training Fail"
	case 137:
		return "NVLink Privilege Error"
	case 138:
		return "Robust Channel DLA Error"
	case 139:
		return "Robust Channel OFA1 Error"
	case 140:
		return "Unrecovered ECC Error"
	case 141:
		return "Robust Channel Fast Path Error"
	case 142:
		return "Robust Channel NVENVC3 Error"
	case 143:
		return "GPU Initialization Failure"
	case 144:
		return "NVLINK: Saw Error"
	case 145:
		return "NVLINK: RLW Error"
	case 146:
		return "NVLINK: TLW Error"
	case 147:
		return "NVLINK: TREX Error"
	case 148:
		return "NVLINK: NVLPW_CTRL Error"
	case 149:
		return "NVLINK: NETIR Error"
	case 150:
		return "NVLINK: MSE Error"
	case 151:
		return "Robust Channel Key rotation Error"
	case 152:
		return "Robust Channel DLA SMMU Error"
	case 153:
		return "Robust Channel DLA timeout Error"
	case 154:
		return "GPU Recovery Action Changed"
	case 155:
		return "NVLINK: SW Defined Error"
	case 156:
		return "Resource Retirement Event"
	case 157:
		return "Resource Retirement Failure"
	case 158:
		return "GPU Fatal Timeout"
	case 159:
		return "Robust Channel CHI Non-Data Error"
	case 160:
		return "Channel Retirement Event"
	case 161:
		return "Channel Retirement Failure"
	case 162:
		return "Power Smoothing HW Circuitry Reengaged"
	case 163:
		return "Power Smoothing HW Circuitry Disengaged"
	case 164:
		return "Power Smoothing HW Circuitry Low Lifetime"
	case 165:
		return "Power Smoothing HW Circuitry Lifetime Exhausted"
	case 166:
		return "NVLINK Secure Crypto Error"
	case 167:
		return "PCIE Fatal Timeout"
	case 168:
		return "Reduced GPU Memory Capacity (Errors found in write protection region)"
	case 170:
		return "NVLINK: Interrupt seen in CC mode"
	case 171:
		return "Uncorrectable DRAM Error"
	case 172:
		return "Uncorrectable SRAM Error"
	}
	return "Unknown Error"
}
