// Package keyfile keeps one of the appliance's Ed25519 private keys in a
// file on its data partition: PEM of its PKCS #8 form (as openssl writes
// it, so an operator can inspect it with openssl pkey), mode 0600, made on
// first use and written whole or not at all (edge/durable).
//
// A key file is never replaced: something outside the appliance depends on
// the key (the badges it signed, the cloud that knows its identity), so a
// file that is there and unusable is a *FileError that names the file and
// leaves it as it is. The appliance's badge key (edge/badgekey) and its
// identity key (edge/enrol) are both kept this way.
//
// It may import the standard library and shared/durable.
package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/svc-vms/svc/shared/durable"
)

// pemType is the PEM block type of a PKCS #8 private key.
const pemType = "PRIVATE KEY"

// maxFile bounds what Open reads: a PEM Ed25519 key is 119 bytes.
const maxFile = 4 << 10

// ErrDamaged is returned, inside a *FileError, when the key file's content
// is not one Ed25519 private key in PEM: empty, truncated, another kind of
// key, or anything after it.
var ErrDamaged = errors.New("key file is damaged")

// FileError is returned by Open when the key file is there and cannot be
// used: unreadable, open to other users, or damaged (ErrDamaged). Callers
// wrap it with what to do for their key.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("key file %s: %v", e.Path, e.Err) }

func (e *FileError) Unwrap() error { return e.Err }

// Open returns the private key kept at path. When there is no file at
// path it makes a key from random (crypto/rand when nil) and writes it
// there first, durably, with mode 0600: created is true then. A file at
// path that cannot be used is a *FileError, and the file is left as it
// is. Other errors are the file system's, from making a new file.
func Open(path string, random io.Reader) (priv ed25519.PrivateKey, created bool, err error) {
	priv, err = Load(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return priv, false, err
	}
	if random == nil {
		random = rand.Reader
	}
	_, fresh, err := ed25519.GenerateKey(random)
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: make: %w", path, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(fresh)
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: make: %w", path, err)
	}
	err = durable.CreateNew(path, pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: der}), 0o600)
	if errors.Is(err, fs.ErrExist) {
		priv, err := Load(path) // made meanwhile by another process: that one stands
		return priv, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: write: %w", path, err)
	}
	priv, err = Load(path) // what is on disk is what signs
	return priv, err == nil, err
}

// Load reads the key at path without making one: an error wrapping
// fs.ErrNotExist when there is no file, a *FileError for one that cannot
// be used.
func Load(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case err != nil:
		return nil, &FileError{Path: path, Err: err}
	case !st.Mode().IsRegular():
		return nil, &FileError{Path: path, Err: fmt.Errorf("not a regular file (%s)", st.Mode().Type())}
	case st.Mode().Perm()&0o077 != 0:
		return nil, &FileError{Path: path, Err: fmt.Errorf("mode %#o lets other users read the private key, want 0600", st.Mode().Perm())}
	case st.Size() > maxFile:
		return nil, &FileError{Path: path, Err: fmt.Errorf("%w: %d bytes, more than a key", ErrDamaged, st.Size())}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	priv, err := parse(raw)
	if err != nil {
		return nil, &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrDamaged, err)}
	}
	return priv, nil
}

// parse reads exactly one PEM block of a PKCS #8 Ed25519 private key.
func parse(raw []byte) (ed25519.PrivateKey, error) {
	b, rest := pem.Decode(raw)
	switch {
	case b == nil:
		return nil, errors.New("no PEM block")
	case b.Type != pemType || len(b.Headers) > 0:
		return nil, fmt.Errorf("a PEM block of type %q, not %q", b.Type, pemType)
	case len(bytes.TrimSpace(rest)) > 0:
		return nil, errors.New("data after the key")
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an Ed25519 key", key)
	}
	return priv, nil
}
