package reader_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/gate/reader"
)

// startTCP runs a TCP reader on 127.0.0.1:0 until the test ends.
func startTCP(t *testing.T, s *scanned, logs *logBuffer, maxConns int) (*reader.TCP, func() error) {
	t.Helper()
	r, err := reader.ListenTCP("127.0.0.1:0", reader.Options{GateID: gateID, Deliver: s.deliver, MaxLine: 64, Logger: logs.logger()})
	require.NoError(t, err)
	r.MaxConns = maxConns
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			t.Error("Run did not return")
			return nil
		}
	})
	t.Cleanup(func() { _ = stop() })
	return r, stop
}

func dial(t *testing.T, r *reader.TCP) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	_, err := c.Write([]byte(s))
	require.NoError(t, err)
}

func TestTCP_Lines(t *testing.T) {
	s, logs := newScanned(), &logBuffer{}
	r, _ := startTCP(t, s, logs, 0)
	c := dial(t, r)
	write(t, c, "P1:LF\nP1:CRLF\r\nP1:CR\r\n\n\r\r")
	write(t, c, "P1:SPLIT")
	write(t, c, "-ACROSS-WRITES\n")
	write(t, c, strings.Repeat("A", 65)+"\n")                    // over MaxLine: dropped
	write(t, c, strings.Repeat("B", 64)+"\n")                    // exactly MaxLine: kept
	write(t, c, strings.Repeat("C", 200)+"\r"+"P1:AFTER-LONG\n") // the long line ends, the next is read
	write(t, c, "P1:BAD\xff\xfeUTF8\n")
	write(t, c, "END\n")
	got := s.until(t, "END")
	require.Equal(t, []string{"P1:LF", "P1:CRLF", "P1:CR", "P1:SPLIT-ACROSS-WRITES", strings.Repeat("B", 64), "P1:AFTER-LONG"}, got)
	require.Equal(t, gateID, s.gates[0])
	require.Contains(t, logs.String(), "line dropped: longer than the limit")
	require.Contains(t, logs.String(), "bytes=65")
	require.Contains(t, logs.String(), "bytes=200")
	require.Contains(t, logs.String(), "line dropped: not UTF-8")
}

func TestTCP_ManyClients(t *testing.T) {
	s, logs := newScanned(), &logBuffer{}
	r, _ := startTCP(t, s, logs, 0)
	a, b := dial(t, r), dial(t, r)
	write(t, a, "P1:A1\n")
	write(t, b, "P1:B1\n")
	write(t, a, "P1:A2\n")
	got := map[string]bool{}
	for range 3 {
		got[s.next(t)] = true
	}
	require.Equal(t, map[string]bool{"P1:A1": true, "P1:B1": true, "P1:A2": true}, got)

	// A line left when the client closes counts.
	c := dial(t, r)
	write(t, c, "P1:NO-NEWLINE")
	require.NoError(t, c.Close())
	require.Equal(t, "P1:NO-NEWLINE", s.next(t))
}

func TestTCP_MaxConns(t *testing.T) {
	s, logs := newScanned(), &logBuffer{}
	r, _ := startTCP(t, s, logs, 1)
	a := dial(t, r)
	write(t, a, "P1:FIRST\n")
	require.Equal(t, "P1:FIRST", s.next(t)) // a is being served
	b := dial(t, r)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := b.Read(make([]byte, 1))
	require.Error(t, err, "the connection over the limit is closed")
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, logs.String(), "too many")
	write(t, a, "P1:STILL\n")
	require.Equal(t, "P1:STILL", s.next(t))
}

func TestTCP_StopClosesConnections(t *testing.T) {
	s, logs := newScanned(), &logBuffer{}
	r, stop := startTCP(t, s, logs, 0)
	c := dial(t, r)
	write(t, c, "P1:X\n")
	require.Equal(t, "P1:X", s.next(t))
	require.NoError(t, stop())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errorsAs(err, &ne) && ne.Timeout(), "closed by the reader, not timed out: %v", err)
	_, err = net.Dial("tcp", r.Addr().String())
	require.Error(t, err, "the listener is closed")
}

func TestListenTCP_PortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = reader.ListenTCP(ln.Addr().String(), reader.Options{GateID: gateID})
	require.ErrorContains(t, err, "address already in use")
}
