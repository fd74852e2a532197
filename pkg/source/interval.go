package source

import "time"

// MinInterval is the shortest collection, fabric, kubelet and job-mapping
// refresh interval accepted: DCGM samples most fields every 100ms at best,
// and shorter loops only spin.
const MinInterval = 100 * time.Millisecond
