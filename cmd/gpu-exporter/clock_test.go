package main

import (
	"sync/atomic"
	"time"
)

// atomicTime is a clock the test moves while other goroutines read it.
type atomicTime struct{ v atomic.Int64 }

func (a *atomicTime) Store(t time.Time) { a.v.Store(t.UnixNano()) }
func (a *atomicTime) Load() time.Time   { return time.Unix(0, a.v.Load()).UTC() }
