// Package fakeclock is a clock that tests and benchmarks set and move:
// the code under test is given its Now instead of time.Now. It is safe
// for concurrent use, and its times are in UTC.
//
// It imports only the standard library.
package fakeclock

import (
	"sync/atomic"
	"time"
)

// Clock is a settable clock; the zero Clock reads the Unix epoch.
type Clock struct{ ns atomic.Int64 }

// New returns a clock that reads t until it is set or moved.
func New(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set sets the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
