// Package kek seals the cloud's recoverable secrets (pass-signing private
// keys, webhook signing secrets, server secrets) with a key-encryption key
// (KEK) from the configuration, so a copy of the database alone reveals
// none of them.
//
// A sealed value is text: "kek1." then the KEK's ID (8 hex digits) and "."
// then base64 (standard, unpadded) of a 12-byte random nonce and the
// AES-256-GCM ciphertext with its tag. The additional data is the row's
// identity (table, column and key, as the stores name it), so a sealed value
// moved to another row or column does not open. "kek1" is the format's
// version: another cipher or layout takes a new prefix.
//
// A Ring holds the current KEK, which seals, and older ones, which still
// open: rotating the KEK is putting a new one first, letting the stores
// re-seal every value under it at start (Reseal), then dropping the old one.
//
// It may import the standard library only.
package kek

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Size is the length of a KEK in bytes: AES-256.
const Size = 32

// Prefix starts every sealed value; it names the format's version.
const Prefix = "kek1."

const (
	idLen    = 8 // hex digits of a KEK's ID
	nonceLen = 12
)

var b64 = base64.RawStdEncoding

// Ring is a current KEK and the older ones that may still open values. It
// is safe for concurrent use.
type Ring struct {
	current *key
	byID    map[string]*key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// New returns a Ring of keys, each Size bytes: the first is current, the
// others only open. It returns an error wrapping ErrInvalidKey when a key
// is not Size bytes, when there is none, or when one is given twice.
func New(keys ...[]byte) (*Ring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrInvalidKey)
	}
	r := &Ring{byID: map[string]*key{}}
	for i, k := range keys {
		if len(k) != Size {
			return nil, fmt.Errorf("%w: key %d is %d bytes, want %d", ErrInvalidKey, i+1, len(k), Size)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidKey, err)
		}
		kk := &key{id: ID(k), aead: aead}
		if _, dup := r.byID[kk.id]; dup {
			return nil, fmt.Errorf("%w: key %d is given twice", ErrInvalidKey, i+1)
		}
		r.byID[kk.id] = kk
		if i == 0 {
			r.current = kk
		}
	}
	return r, nil
}

// ID names a KEK in the values it seals: 8 hex digits of a SHA-256 of it
// (which reveals nothing useful of a 256-bit random key).
func ID(k []byte) string {
	sum := sha256.Sum256(append([]byte("svc kek id\x00"), k...))
	return hex.EncodeToString(sum[:idLen/2])
}

// Generate returns a new random KEK.
func Generate() []byte {
	k := make([]byte, Size)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
}

// Encode is a KEK as the configuration holds it: standard base64.
func Encode(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// Parse reads a Ring from text in ParseKeys's format.
func Parse(text string) (*Ring, error) {
	keys, err := ParseKeys(text)
	if err != nil {
		return nil, err
	}
	return New(keys...)
}

// ParseKeys reads KEKs from text: standard base64, one per line (or
// separated by commas), the current one first; blank lines and lines
// starting with # are ignored. The error wraps ErrInvalidKey and never
// quotes the text.
func ParseKeys(text string) ([][]byte, error) {
	var keys [][]byte
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, entry := range strings.Split(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			n++
			k, err := base64.StdEncoding.DecodeString(entry)
			if err != nil {
				return nil, fmt.Errorf("%w: entry %d is not standard base64", ErrInvalidKey, n)
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrInvalidKey)
	}
	return keys, nil
}

// ID is the current KEK's ID.
func (r *Ring) ID() string { return r.current.id }

// Seal returns plaintext sealed under the current KEK for the row named by
// ad.
func (r *Ring) Seal(ad string, plaintext []byte) []byte {
	nonce := make([]byte, nonceLen, nonceLen+len(plaintext)+r.current.aead.Overhead())
	_, _ = rand.Read(nonce)
	box := r.current.aead.Seal(nonce, nonce, plaintext, additional(ad))
	out := make([]byte, 0, len(Prefix)+idLen+1+b64.EncodedLen(len(box)))
	out = append(out, Prefix...)
	out = append(out, r.current.id...)
	out = append(out, '.')
	return b64.AppendEncode(out, box)
}

// SealString is Seal for a text column.
func (r *Ring) SealString(ad, plaintext string) string { return string(r.Seal(ad, []byte(plaintext))) }

// Open returns the plaintext of a value Seal made for the row named by ad.
// It returns ErrNotSealed for a value that is not sealed at all (plain text
// from before sealing), ErrUnknownKEK when the ring does not hold the KEK
// that sealed it, and ErrOpen when it was altered, belongs to another row,
// or is not in the format.
func (r *Ring) Open(ad string, sealed []byte) ([]byte, error) {
	id, box, err := split(sealed)
	if err != nil {
		return nil, err
	}
	k, ok := r.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownKEK, id)
	}
	if len(box) < nonceLen+k.aead.Overhead() {
		return nil, ErrOpen
	}
	plain, err := k.aead.Open(nil, box[:nonceLen], box[nonceLen:], additional(ad))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// OpenString is Open for a text column.
func (r *Ring) OpenString(ad, sealed string) (string, error) {
	b, err := r.Open(ad, []byte(sealed))
	return string(b), err
}

// Reseal brings a stored value under the current KEK: a plain value (one
// stored before sealing) is sealed, one sealed under an older KEK of the
// ring is opened and sealed again, and one sealed under the current KEK is
// returned as it is with changed false once it is known to open. The errors
// are Open's, apart from ErrNotSealed.
func (r *Ring) Reseal(ad string, v []byte) (out []byte, changed bool, err error) {
	if !IsSealed(v) {
		return r.Seal(ad, v), true, nil
	}
	plain, err := r.Open(ad, v)
	if err != nil {
		return nil, false, err
	}
	if id, _, _ := split(v); id == r.current.id {
		return v, false, nil
	}
	return r.Seal(ad, plain), true, nil
}

// IsSealed reports whether v is in the sealed format's envelope (whether or
// not it would open).
func IsSealed(v []byte) bool { return bytes.HasPrefix(v, []byte(Prefix)) }

func split(v []byte) (id string, box []byte, err error) {
	if !IsSealed(v) {
		return "", nil, ErrNotSealed
	}
	rest := v[len(Prefix):]
	if len(rest) < idLen+1 || rest[idLen] != '.' {
		return "", nil, ErrOpen
	}
	box, err = b64.DecodeString(string(rest[idLen+1:]))
	if err != nil {
		return "", nil, ErrOpen
	}
	return string(rest[:idLen]), box, nil
}

// additional is the AEAD's additional data: the format and the row.
func additional(ad string) []byte { return []byte(Prefix + ad) }
