package source

import (
	"fmt"
	"time"
)

// MinInterval is the shortest collection, fabric, kubelet and job-mapping
// refresh interval accepted: DCGM samples most fields every 100ms at best,
// and shorter loops only spin.
const MinInterval = 100 * time.Millisecond

// RefreshInterval checks the refresh interval v given by flag (a kubelet
// or job-mapping refresh): 0 means every collection, collectInterval; a
// negative value or one below MinInterval is refused, naming flag.
func RefreshInterval(flag string, v, collectInterval time.Duration) (time.Duration, error) {
	if v < 0 {
		return 0, fmt.Errorf("%s must not be negative, got %s", flag, v)
	}
	if v == 0 {
		v = collectInterval
	}
	if v < MinInterval {
		return 0, fmt.Errorf("%s must be at least %s, got %s", flag, MinInterval, v)
	}
	return v, nil
}
