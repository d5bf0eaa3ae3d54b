package kiosk

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/shared/durable"
	"github.com/svc-vms/svc/shared/ids"
)

// Modes a device is paired in.
const (
	// ModeVisitor is the tablet facing the door: sign-in, express check-in
	// and sign-out; reception behind the site's PIN.
	ModeVisitor = "visitor"
	// ModeReception is the receptionist's own device: the queue, who is on
	// site, hand-over, check-out and badges, without a PIN.
	ModeReception = "reception"
)

// Pairing and PIN limits.
const (
	// PairingTTL is how long a pairing code may be typed.
	PairingTTL = 10 * time.Minute
	// PairingTries is how many wrong codes end every open code: a code is 6
	// digits, so a guesser has 5 tries in a million before an installer
	// must show a new one.
	PairingTries = 5
	// PINTries wrong PINs on one device lock reception on it for PINLock.
	PINTries = 5
	PINLock  = 5 * time.Minute
	// MinPIN and MaxPIN bound the site's PIN's digits.
	MinPIN = 4
	MaxPIN = 12
	// pbkdf2Rounds makes one PIN guess cost about a millisecond on a
	// Raspberry Pi 4 while the file holding the hash is read offline.
	pbkdf2Rounds = 100_000
)

// Errors of the device registry.
var (
	// ErrBadCode is returned when a pairing code is unknown, used or
	// expired.
	ErrBadCode = errors.New("kiosk: the pairing code is not valid; ask for a new one")
	// ErrUnpaired is returned when a credential names no paired device
	// (never paired, or revoked).
	ErrUnpaired = errors.New("kiosk: this browser is not paired")
	// ErrBadPIN is returned when the PIN is wrong.
	ErrBadPIN = errors.New("kiosk: the PIN is wrong")
	// ErrNoPIN is returned when reception is asked for and the site has no
	// PIN: a visitor-mode device cannot reach reception until one is set.
	ErrNoPIN = errors.New("kiosk: no reception PIN is set for this site (svc-edge kiosk pin)")
	// ErrLocked is returned while a device is locked after too many wrong
	// PINs.
	ErrLocked = errors.New("kiosk: too many wrong PINs; try again in a few minutes")
)

// Device is a paired browser. Its credential is a random secret held in
// the browser's cookie; the registry keeps only its SHA-256.
type Device struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Mode     string    `json:"mode"`
	Printer  string    `json:"printer,omitempty"` // host:port of a Brother QL on the LAN, or ""
	PairedAt time.Time `json:"paired_at"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	Secret   []byte    `json:"secret_sha256"`
}

// PairingCode is a one-time code an installer reads off svc-edge and types
// on the tablet.
type PairingCode struct {
	Code    string    `json:"code"`
	Name    string    `json:"name"`
	Mode    string    `json:"mode"`
	Printer string    `json:"printer,omitempty"`
	Expires time.Time `json:"expires"`
}

type registryFile struct {
	V       int       `json:"v"`
	Devices []Device  `json:"devices"`
	PIN     *pinHash  `json:"pin,omitempty"`
	Revoked []revoked `json:"revoked,omitempty"`
}

type pinHash struct {
	Salt   []byte `json:"salt"`
	Rounds int    `json:"rounds"`
	Hash   []byte `json:"hash"`
}

type revoked struct {
	ID  string    `json:"id"`
	At  time.Time `json:"at"`
	Was string    `json:"name"`
}

// Devices is the kiosk's registry of paired browsers and the site's
// reception PIN, kept in one JSON file on the appliance's data partition
// and rewritten atomically on each change (pairing, revocation, PIN; not
// on every request: LastSeen is kept in memory and written with the next
// change).
type Devices struct {
	path string

	mu       sync.Mutex
	file     registryFile
	codes    []PairingCode
	misses   int // wrong pairing codes since the last new code
	pinFails map[string]pinFail
}

type pinFail struct {
	n     int
	until time.Time
}

// OpenDevices reads the registry at path, or starts an empty one when the
// file does not exist. A file that does not parse is an error naming it:
// the installer must look, since resetting it unpairs every tablet.
func OpenDevices(path string) (*Devices, error) {
	d := &Devices{path: path, pinFails: map[string]pinFail{}}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		d.file.V = 1
		return d, nil
	case err != nil:
		return nil, fmt.Errorf("kiosk: read devices: %w", err)
	}
	if err := json.Unmarshal(b, &d.file); err != nil {
		return nil, fmt.Errorf("kiosk: devices file %s is damaged (%v); move it aside to unpair every kiosk and start again", path, err)
	}
	if d.file.V != 1 {
		return nil, fmt.Errorf("kiosk: devices file %s has version %d; this svc-edge reads version 1", path, d.file.V)
	}
	for _, dev := range d.file.Devices {
		if !ids.Valid(ids.Kiosk, dev.ID) || len(dev.Secret) != sha256.Size || (dev.Mode != ModeVisitor && dev.Mode != ModeReception) {
			return nil, fmt.Errorf("kiosk: devices file %s holds a damaged device %q", path, dev.ID)
		}
	}
	return d, nil
}

// save writes the registry; the caller holds mu.
func (d *Devices) save() error {
	b, err := json.MarshalIndent(d.file, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(d.path, 0o600, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("kiosk: save %s: %w", d.path, err)
	}
	return nil
}

// NewCode makes a one-time pairing code for a device called name, in mode,
// printing to printer (host:port or ""). Earlier codes stay valid until
// they expire or are used.
func (d *Devices) NewCode(name, mode, printer string, now time.Time) (PairingCode, error) {
	name = strings.TrimSpace(name)
	switch {
	case mode != ModeVisitor && mode != ModeReception:
		return PairingCode{}, fmt.Errorf("kiosk: mode %q is not %s or %s", mode, ModeVisitor, ModeReception)
	case name == "" || len(name) > 60:
		return PairingCode{}, errors.New("kiosk: a device name of 1 to 60 characters is needed")
	case printer != "" && !validHostPort(printer):
		return PairingCode{}, fmt.Errorf("kiosk: printer %q is not host:port", printer)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return PairingCode{}, err
	}
	c := PairingCode{Code: fmt.Sprintf("%06d", n.Int64()), Name: name, Mode: mode, Printer: printer, Expires: now.Add(PairingTTL)}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.codes = slices.DeleteFunc(d.codes, func(x PairingCode) bool { return !now.Before(x.Expires) || x.Code == c.Code })
	d.codes = append(d.codes, c)
	d.misses = 0
	return c, nil
}

// Pair turns code into a paired device and returns it with the credential
// the browser keeps. Wrong codes count: after PairingTries of them every
// open code ends.
func (d *Devices) Pair(code string, now time.Time) (Device, string, error) {
	code = strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, code)
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.IndexFunc(d.codes, func(x PairingCode) bool {
		return subtle.ConstantTimeCompare([]byte(x.Code), []byte(code)) == 1 && now.Before(x.Expires)
	})
	if i < 0 {
		d.misses++
		if d.misses >= PairingTries {
			d.codes, d.misses = nil, 0
		}
		return Device{}, "", ErrBadCode
	}
	c := d.codes[i]
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Device{}, "", err
	}
	sum := sha256.Sum256(secret)
	dev := Device{ID: ids.New(ids.Kiosk), Name: c.Name, Mode: c.Mode, Printer: c.Printer, PairedAt: now, LastSeen: now, Secret: sum[:]}
	d.file.Devices = append(d.file.Devices, dev)
	if err := d.save(); err != nil {
		d.file.Devices = d.file.Devices[:len(d.file.Devices)-1]
		return Device{}, "", err
	}
	d.codes = slices.Delete(d.codes, i, i+1)
	return dev, dev.ID + "." + base64.RawURLEncoding.EncodeToString(secret), nil
}

// Authenticate returns the device a cookie's credential names.
func (d *Devices) Authenticate(credential string, now time.Time) (Device, error) {
	id, enc, ok := strings.Cut(credential, ".")
	if !ok || !ids.Valid(ids.Kiosk, id) {
		return Device{}, ErrUnpaired
	}
	secret, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(secret) != 32 {
		return Device{}, ErrUnpaired
	}
	sum := sha256.Sum256(secret)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.file.Devices {
		dev := &d.file.Devices[i]
		if dev.ID == id && subtle.ConstantTimeCompare(dev.Secret, sum[:]) == 1 {
			dev.LastSeen = now
			return *dev, nil
		}
	}
	return Device{}, ErrUnpaired
}

// List returns the paired devices, oldest first.
func (d *Devices) List() []Device {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.file.Devices)
}

// Revoke unpairs a device: its browser sees the pairing page at its next
// request. It returns ErrUnpaired for an unknown ID.
func (d *Devices) Revoke(id string, now time.Time) (Device, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.IndexFunc(d.file.Devices, func(x Device) bool { return x.ID == id })
	if i < 0 {
		return Device{}, ErrUnpaired
	}
	dev := d.file.Devices[i]
	prev := d.file
	d.file.Devices = slices.Delete(slices.Clone(d.file.Devices), i, i+1)
	d.file.Revoked = append(slices.Clone(d.file.Revoked), revoked{ID: dev.ID, At: now, Was: dev.Name})
	if err := d.save(); err != nil {
		d.file = prev
		return Device{}, err
	}
	return dev, nil
}

// SetPrinter sets the label printer a device prints badges on ("" for the
// browser's print dialog only).
func (d *Devices) SetPrinter(id, printer string) (Device, error) {
	if printer != "" && !validHostPort(printer) {
		return Device{}, fmt.Errorf("kiosk: printer %q is not host:port", printer)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	i := slices.IndexFunc(d.file.Devices, func(x Device) bool { return x.ID == id })
	if i < 0 {
		return Device{}, ErrUnpaired
	}
	old := d.file.Devices[i].Printer
	d.file.Devices[i].Printer = printer
	if err := d.save(); err != nil {
		d.file.Devices[i].Printer = old
		return Device{}, err
	}
	return d.file.Devices[i], nil
}

// SetPIN sets the site's reception PIN: MinPIN to MaxPIN digits.
func (d *Devices) SetPIN(pin string) error {
	if len(pin) < MinPIN || len(pin) > MaxPIN || strings.Trim(pin, "0123456789") != "" {
		return fmt.Errorf("kiosk: a PIN is %d to %d digits", MinPIN, MaxPIN)
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	h, err := pbkdf2.Key(sha256.New, pin, salt, pbkdf2Rounds, 32)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	prev := d.file.PIN
	d.file.PIN = &pinHash{Salt: salt, Rounds: pbkdf2Rounds, Hash: h}
	if err := d.save(); err != nil {
		d.file.PIN = prev
		return err
	}
	return nil
}

// HasPIN reports whether the site has a reception PIN.
func (d *Devices) HasPIN() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.file.PIN != nil
}

// CheckPIN checks pin typed on device id. PINTries wrong ones lock
// reception on that device for PINLock.
//
// Each try is counted as a wrong one before its hash is computed, and
// forgiven when it turns out right: counted after, a burst of guesses sent
// at once would all pass the lock check while the first were hashing.
func (d *Devices) CheckPIN(id, pin string, now time.Time) error {
	d.mu.Lock()
	f := d.pinFails[id]
	ph := d.file.PIN
	switch {
	case now.Before(f.until):
		d.mu.Unlock()
		return ErrLocked
	case ph == nil:
		d.mu.Unlock()
		return ErrNoPIN
	}
	if !f.until.IsZero() {
		f = pinFail{} // a lock that has ended: PINTries more
	}
	f.n++
	if f.n >= PINTries {
		f.until = now.Add(PINLock)
	}
	d.pinFails[id] = f
	d.mu.Unlock()

	h, err := pbkdf2.Key(sha256.New, pin, ph.Salt, ph.Rounds, len(ph.Hash))
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(h, ph.Hash) != 1 {
		return ErrBadPIN
	}
	d.mu.Lock()
	delete(d.pinFails, id)
	d.mu.Unlock()
	return nil
}

func validHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || len(s) > 255 {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535
}
