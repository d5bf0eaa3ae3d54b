package reader

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

var baudFlags = map[int]uint32{
	1200: unix.B1200, 2400: unix.B2400, 4800: unix.B4800, 9600: unix.B9600, 19200: unix.B19200,
	38400: unix.B38400, 57600: unix.B57600, 115200: unix.B115200, 230400: unix.B230400,
}

// openSerial opens a tty and sets it raw (no echo, no line editing, no
// translation of CR or LF, no signals from ^C, 8 data bits, no parity,
// modem lines ignored) at baud, as cfmakeraw and cfsetspeed would.
func openSerial(path string, baud int) (serialFile, error) {
	speed, ok := baudFlags[baud]
	if !ok {
		return nil, fmt.Errorf("serial %s: %d: %w", path, baud, ErrBaud)
	}
	// O_NOCTTY: a reader must never become the daemon's controlling
	// terminal. os.OpenFile registers a tty with the runtime's poller, so
	// Close wakes a blocked Read.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("serial %s: %w", path, err)
	}
	raw, err := f.SyscallConn() // not Fd(), which would make the file blocking
	if err == nil {
		cerr := raw.Control(func(fd uintptr) { err = setRaw(int(fd), speed) })
		if cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("serial %s: set raw mode: %w", path, err)
	}
	return f, nil
}

func setRaw(fd int, speed uint32) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.CSTOPB | unix.CRTSCTS | unix.CBAUD
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL | speed
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}
