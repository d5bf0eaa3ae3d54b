package reader_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/svc-vms/svc/gate/reader"
)

// openPTY opens a pseudo-terminal: the test writes to master as a QR
// reader would, and the reader under test opens the device at path.
func openPTY(t *testing.T) (master *os.File, path string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	rc, err := m.SyscallConn()
	require.NoError(t, err)
	var n int
	var ierr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}))
	require.NoError(t, ierr)
	return m, fmt.Sprintf("/dev/pts/%d", n)
}

// termios reads the device's settings through a descriptor of its own.
func termios(t *testing.T, path string) *unix.Termios {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	require.NoError(t, err)
	return tio
}

// waitRaw polls the device until the reader has set it raw.
func waitRaw(t *testing.T, path string) *unix.Termios {
	t.Helper()
	var tio *unix.Termios
	if !poll.Until(10*time.Second, 5*time.Millisecond, func() bool {
		tio = termios(t, path)
		return tio.Lflag&unix.ICANON == 0
	}) {
		t.Fatal("the reader did not set the device raw")
	}
	return tio
}

func startSerial(t *testing.T, path string, baud int, s *scanned, logs *logBuffer) context.CancelFunc {
	t.Helper()
	r, err := reader.NewSerial(path, baud, reader.Options{GateID: gateID, Deliver: s.deliver, MaxLine: 64, Logger: logs.logger()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	return cancel
}

func TestSerial_RawModeAndLines(t *testing.T) {
	master, path := openPTY(t)
	before := termios(t, path)
	require.NotZero(t, before.Lflag&unix.ICANON, "a new pty starts in canonical mode")
	require.NotZero(t, before.Lflag&unix.ECHO)

	s, logs := newScanned(), &logBuffer{}
	startSerial(t, path, 115200, s, logs)
	tio := waitRaw(t, path)
	require.Zero(t, tio.Lflag&(unix.ECHO|unix.ISIG|unix.IEXTEN), "no echo, no signals")
	require.Zero(t, tio.Iflag&(unix.ICRNL|unix.IXON), "CR reaches the reader as it was sent; no flow control")
	require.Zero(t, tio.Oflag&unix.OPOST)
	require.Equal(t, uint32(unix.CS8), tio.Cflag&unix.CSIZE)
	require.Equal(t, uint32(unix.B115200), tio.Cflag&unix.CBAUD)
	require.Equal(t, uint8(1), tio.Cc[unix.VMIN])

	// ^C (0x03) would be a signal and ^U (0x15) would erase the line in
	// canonical mode; raw, they are bytes of the line like any other.
	_, err := master.Write([]byte("P1:ONE\rP1:TWO\r\nP1:\x03\x15X\n" + "P1:BAD\xc3\x28\r" + "END\r"))
	require.NoError(t, err)
	require.Equal(t, []string{"P1:ONE", "P1:TWO", "P1:\x03\x15X"}, s.until(t, "END"))
	require.Contains(t, logs.String(), "not UTF-8")
}

func TestSerial_Baud(t *testing.T) {
	_, path := openPTY(t)
	s, logs := newScanned(), &logBuffer{}
	startSerial(t, path, 9600, s, logs)
	require.Equal(t, uint32(unix.B9600), waitRaw(t, path).Cflag&unix.CBAUD)

	_, err := reader.NewSerial(path, 9601, reader.Options{GateID: gateID})
	require.ErrorIs(t, err, reader.ErrBaud)
}

// TestSerial_DeviceAppearsLater starts a reader on a device that does not
// exist yet, as when a USB reader is plugged in after boot: it retries and
// reads once the device is there.
func TestSerial_DeviceAppearsLater(t *testing.T) {
	link := filepath.Join(t.TempDir(), "ttyACM0")
	s, logs := newScanned(), &logBuffer{}
	startSerial(t, link, 9600, s, logs)

	master, path := openPTY(t)
	require.True(t, poll.Until(10*time.Second, 5*time.Millisecond, func() bool { return containsLog(logs, "device unavailable") }),
		"no retry logged")
	require.NoError(t, os.Symlink(path, link))
	waitRaw(t, path)
	_, err := master.Write([]byte("P1:LATE\r"))
	require.NoError(t, err)
	require.Equal(t, "P1:LATE", s.next(t))
}

func containsLog(l *logBuffer, s string) bool { return contains(l.String(), s) }
