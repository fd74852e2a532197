package nvml

import "strings"

// validText replaces each run of bytes that is not UTF-8 with U+FFFD. NVML
// copies the driver's char arrays (names, UUIDs, bus ids, the driver
// version) unchecked, and a label value that is not UTF-8 makes Prometheus
// reject the whole scrape; strings enter the source through it once.
func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
