package reader_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate/reader"
	"github.com/svc-vms/svc/shared/lockedbuf"
)

const gateID = "gate_01m7ym407qfqpbgybweqvx4fga"

// scanned is a Deliver that keeps what it is given, and a channel that
// hears of each scan.
type scanned struct {
	mu    sync.Mutex
	texts []string
	gates []string
	ch    chan string
}

func newScanned() *scanned { return &scanned{ch: make(chan string, 100)} }

func (s *scanned) deliver(_ context.Context, gate, text string, _ time.Time) {
	s.mu.Lock()
	s.texts = append(s.texts, text)
	s.gates = append(s.gates, gate)
	s.mu.Unlock()
	s.ch <- text
}

// next waits for the next scan.
func (s *scanned) next(t *testing.T) string {
	t.Helper()
	select {
	case text := <-s.ch:
		return text
	case <-time.After(5 * time.Second):
		t.Fatal("no scan delivered")
		return ""
	}
}

// until returns the scans delivered before marker, which is sent after
// them, so nothing sent before it can still be on its way.
func (s *scanned) until(t *testing.T, marker string) []string {
	t.Helper()
	var got []string
	for {
		text := s.next(t)
		if text == marker {
			return got
		}
		got = append(got, text)
	}
}

// logBuffer is a logger whose output a test can read, safely.
type logBuffer struct{ lockedbuf.Buffer }

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func TestDebounce(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := newScanned()
	d := reader.Debounce(2*time.Second, s.deliver)
	ctx := context.Background()
	d(ctx, "gate_a", "P1:ONE", at)
	d(ctx, "gate_a", "P1:ONE", at.Add(time.Second))           // repeat: dropped
	d(ctx, "gate_b", "P1:ONE", at.Add(time.Second))           // another gate
	d(ctx, "gate_a", "P1:TWO", at.Add(time.Second))           // another text
	d(ctx, "gate_a", "P1:ONE", at.Add(2900*time.Millisecond)) // within 2 s of the last repeat: held in front of the camera
	d(ctx, "gate_a", "P1:ONE", at.Add(5*time.Second))         // presented again
	require.Equal(t, []string{"P1:ONE", "P1:ONE", "P1:TWO", "P1:ONE"}, s.texts)
	require.Equal(t, []string{"gate_a", "gate_b", "gate_a", "gate_a"}, s.gates)

	s2 := newScanned()
	none := reader.Debounce(0, s2.deliver)
	none(ctx, "gate_a", "x", at)
	none(ctx, "gate_a", "x", at)
	require.Len(t, s2.texts, 2, "a zero window passes everything")
}

func TestDebounce_ForgetsOldTexts(t *testing.T) {
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	n := 0
	d := reader.Debounce(time.Second, func(context.Context, string, string, time.Time) { n++ })
	for i := range 5000 {
		d(context.Background(), "g", strings.Repeat("x", i%3000+1), at.Add(time.Duration(i)*time.Second))
	}
	require.Equal(t, 5000, n, "every text was new or a second apart")
}
