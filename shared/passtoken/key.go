package passtoken

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
)

// keyIDSize is the number of random bytes in a key ID. Four are plenty: IDs
// only need to differ among the few keys one organisation has at a time, and
// the signature, not the ID, is what authenticates.
const keyIDSize = 4

// Key is an organisation's pass-signing key. ID is 8 lower-case hex digits
// (4 random bytes), unique within the organisation; the cloud keeps the key
// secret and hands out only its Public half.
type Key struct {
	ID      string
	Private ed25519.PrivateKey
}

// NewKey makes a key from 36 bytes of random: 4 for the ID, then the 32-byte
// Ed25519 seed. A nil random means crypto/rand. The caller checks that the ID
// is not already one of the organisation's (1 in 4 billion).
func NewKey(random io.Reader) (Key, error) {
	if random == nil {
		random = rand.Reader
	}
	var id [keyIDSize]byte
	if _, err := io.ReadFull(random, id[:]); err != nil {
		return Key{}, fmt.Errorf("new pass key: read ID: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return Key{}, fmt.Errorf("new pass key: %w", err)
	}
	return Key{ID: hex.EncodeToString(id[:]), Private: priv}, nil
}

// Public returns the half of k that verifiers hold.
func (k Key) Public() PublicKey {
	pub, _ := k.Private.Public().(ed25519.PublicKey)
	return PublicKey{ID: k.ID, Key: pub}
}

// PublicKey is what an appliance or the cloud needs to verify the tokens a
// Key signed.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// KeySet maps key IDs to the public keys a verifier accepts: the
// organisation's current key and the retired ones still honoured. Build it
// with NewKeySet, which checks each key, or as a map literal.
type KeySet map[string]ed25519.PublicKey

// NewKeySet returns a KeySet of keys. It returns an error wrapping
// ErrInvalidKey when an ID is not 8 lower-case hex digits, a key is not
// ed25519.PublicKeySize bytes, or one ID comes with two different keys.
func NewKeySet(keys ...PublicKey) (KeySet, error) {
	set := make(KeySet, len(keys))
	for _, k := range keys {
		if _, ok := parseKeyID(k.ID); !ok {
			return nil, fmt.Errorf("new key set: key ID %q is not %d lower-case hex digits: %w", k.ID, 2*keyIDSize, ErrInvalidKey)
		}
		if len(k.Key) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("new key set: key %s has %d bytes, want %d: %w", k.ID, len(k.Key), ed25519.PublicKeySize, ErrInvalidKey)
		}
		if old, ok := set[k.ID]; ok && !old.Equal(k.Key) {
			return nil, fmt.Errorf("new key set: two keys with ID %s: %w", k.ID, ErrInvalidKey)
		}
		set[k.ID] = k.Key
	}
	return set, nil
}

// parseKeyID decodes an ID of exactly 8 lower-case hex digits, the only form
// Sign writes and Verify looks up.
func parseKeyID(s string) ([keyIDSize]byte, bool) {
	var id [keyIDSize]byte
	if len(s) != 2*keyIDSize {
		return id, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return id, false
		}
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, false
	}
	return id, true
}
