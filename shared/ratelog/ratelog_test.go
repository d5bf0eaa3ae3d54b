package ratelog_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/fakeclock"
	"github.com/svc-vms/svc/shared/ratelog"
)

// TestHandler_AFloodOfOneWarningIsCut: a message past its burst in a
// period is dropped and counted; the next one passed says how many; other
// messages and records below Warn are not held back.
func TestHandler_AFloodOfOneWarningIsCut(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	log := slog.New(ratelog.New(slog.NewTextHandler(&buf, nil), 3, time.Minute, clock.Now)).With("component", "test")
	for i := range 100_000 {
		log.Warn("message dropped", "i", i)
		if i%1000 == 0 {
			log.Info("progress", "i", i)
			log.Error("another", "i", i)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	count := func(s string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, s) {
				n++
			}
		}
		return n
	}
	if n := count(`msg="message dropped"`); n != 3 {
		t.Errorf("%d lines of the flooding warning in one minute, want 3", n)
	}
	if n := count(`msg=progress`); n != 100 {
		t.Errorf("%d info lines, want all 100: below Warn is not limited", n)
	}
	if n := count(`msg=another`); n != 3 {
		t.Errorf("%d lines of another warning, want its own burst of 3", n)
	}
	if n := count("component=test"); n != len(lines) {
		t.Errorf("attributes of With are kept: %d of %d lines", n, len(lines))
	}

	buf.Reset()
	clock.Advance(time.Minute)
	log.Warn("message dropped", "i", "next")
	if got := buf.String(); !strings.Contains(got, "suppressed=99997") {
		t.Errorf("the next period's first line says how many were dropped: %q", got)
	}
	buf.Reset()
	log.Warn("message dropped", "i", "again")
	if got := buf.String(); strings.Contains(got, "suppressed") {
		t.Errorf("the count is said once: %q", got)
	}
}
