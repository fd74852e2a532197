package dcgm

import "time"

// backoff is a capped exponential delay between reconnect attempts.
type backoff struct {
	min, max, cur time.Duration
}

func newBackoff(lo, hi time.Duration) backoff { return backoff{min: lo, max: hi} }

// next returns the delay before the next attempt and doubles it, up to max.
func (b *backoff) next() time.Duration {
	if b.cur < b.min {
		b.cur = b.min
	}
	d := b.cur
	b.cur = min(2*b.cur, b.max)
	return d
}

// reset starts over at min after a success.
func (b *backoff) reset() { b.cur = 0 }
