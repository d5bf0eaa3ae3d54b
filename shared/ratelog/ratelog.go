// Package ratelog keeps a flood of one warning from filling a disk: a
// slog.Handler that passes at most Burst records of each message at
// Warn and above per Every, counts the rest, and says how many it
// dropped on the next record of that message it passes. Records below
// Warn pass untouched. A burst of foreign facts on a shared broker once
// wrote 98,000 warnings in under a minute (issue 19).
//
// It may import the standard library only.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Defaults of New.
const (
	DefaultBurst = 10
	DefaultEvery = time.Minute
	// maxMessages bounds the messages tracked: messages are constant
	// strings in the code, so this is only a guard against a caller that
	// puts data in one.
	maxMessages = 1024
)

// Handler is the rate-limiting slog.Handler.
type Handler struct {
	next  slog.Handler
	burst int
	every time.Duration
	now   func() time.Time
	state *state // shared by the handlers WithAttrs and WithGroup make
}

type state struct {
	mu   sync.Mutex
	msgs map[string]*window
}

// window is one message's current period.
type window struct {
	start      time.Time
	passed     int
	suppressed int
}

// New wraps next: burst records of a message per every (zero: the
// defaults); now is the clock (nil: time.Now).
func New(next slog.Handler, burst int, every time.Duration, now func() time.Time) *Handler {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Handler{next: next, burst: burst, every: every, now: now, state: &state{msgs: map[string]*window{}}}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	suppressed, pass := h.state.admit(r.Message, h.now(), h.burst, h.every)
	if !pass {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	return h.next.Handle(ctx, r)
}

// admit decides one record of msg at now; suppressed is how many of msg
// were dropped since the last one passed.
func (s *state) admit(msg string, now time.Time, burst int, every time.Duration) (suppressed int, pass bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.msgs[msg]
	if w == nil {
		if len(s.msgs) >= maxMessages {
			for k, old := range s.msgs {
				if now.Sub(old.start) >= every && old.suppressed == 0 {
					delete(s.msgs, k)
				}
			}
		}
		w = &window{start: now}
		s.msgs[msg] = w
	}
	if now.Sub(w.start) >= every {
		w.start, w.passed = now, 0
	}
	if w.passed >= burst {
		w.suppressed++
		return 0, false
	}
	w.passed++
	suppressed, w.suppressed = w.suppressed, 0
	return suppressed, true
}

// WithAttrs implements slog.Handler; the limits are shared.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(attrs)
	return &c
}

// WithGroup implements slog.Handler; the limits are shared.
func (h *Handler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
