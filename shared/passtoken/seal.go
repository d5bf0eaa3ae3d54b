package passtoken

import (
	"crypto/ed25519"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
)

// The steps every token format shares: prefix‖payload signed, the payload
// starting with the signer's key ID, written as prefix and base32 of
// payload‖signature. A format keeps only its payload's layout and the rules
// on its fields. The callers hand in fixed-size buffers so that a token is
// built and read on the stack: the gate verifies one on every scan.

// b32 writes the token text; decodeBase32 reads it back, strictly.
var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// format is what sets one token format apart in the shared steps.
type format struct {
	prefix string
	// name is what errors call a token of the format: "sign pass: …".
	name string
	// minRaw and maxRaw bound the bytes of payload and signature; they are
	// equal for a format of one length.
	minRaw, maxRaw int
	maxLen         int // of the longest token

	// What Verify's refusals say, made once: a gate meets garbage on every
	// stray scan, and naming the format through an argument of fmt.Errorf
	// would cost an allocation more than the message. The two formats
	// take the key ID (then its size) and a sentinel.
	errLength, errBase32  error
	keyFormat, sizeFormat string
}

var (
	passFormat   = newFormat(Prefix, "pass", headerSize+ed25519.SignatureSize, maxRawSize)
	personFormat = newFormat(PersonPrefix, "personal pass", personRawSize, personRawSize)
	badgeFormat  = newFormat(BadgePrefix, "badge", badgeRawSize, badgeRawSize)
)

func newFormat(prefix, name string, minRaw, maxRaw int) *format {
	f := &format{prefix: prefix, name: name, minRaw: minRaw, maxRaw: maxRaw}
	maxLen := len(prefix) + b32.EncodedLen(maxRaw)
	if minRaw == maxRaw {
		f.errLength = fmt.Errorf("verify %s: no %q prefix or not %d characters: %w", name, prefix, maxLen, ErrMalformed)
	} else {
		f.errLength = fmt.Errorf("verify %s: no %q prefix or longer than %d: %w", name, prefix, maxLen, ErrMalformed)
	}
	f.maxLen = maxLen
	f.errBase32 = fmt.Errorf("verify %s: not canonical base32 of a payload and signature: %w", name, ErrMalformed)
	f.keyFormat = "verify " + name + ": key %s: %w"
	f.sizeFormat = "verify " + name + ": key %s has %d bytes: %w"
	return f
}

// signingKey returns the bytes of k's ID. It returns an error wrapping
// ErrInvalidKey when k cannot sign; a Sign function checks the key before
// the claims.
func (f *format) signingKey(k Key) ([keyIDSize]byte, error) {
	keyID, ok := parseKeyID(k.ID)
	if !ok {
		return keyID, fmt.Errorf("sign %s: key ID %q is not %d lower-case hex digits: %w", f.name, k.ID, 2*keyIDSize, ErrInvalidKey)
	}
	if len(k.Private) != ed25519.PrivateKeySize {
		return keyID, fmt.Errorf("sign %s: private key has %d bytes, want %d: %w", f.name, len(k.Private), ed25519.PrivateKeySize, ErrInvalidKey)
	}
	return keyID, nil
}

// seal returns the token for a payload of size bytes, whose fields after
// the key ID the caller has written into buf after the prefix; seal writes
// the prefix and the key ID. buf must hold the prefix, size bytes and the
// signature, and text the token; priv is one signingKey accepted.
func (f *format) seal(buf, text []byte, keyID [keyIDSize]byte, size int, priv ed25519.PrivateKey) string {
	n := copy(buf, f.prefix)
	copy(buf[n:], keyID[:])
	n += size
	n += copy(buf[n:], ed25519.Sign(priv, buf[:n]))

	m := copy(text, f.prefix)
	m += b32.EncodedLen(n - len(f.prefix))
	b32.Encode(text[len(f.prefix):m], buf[len(f.prefix):n])
	return string(text[:m])
}

// decode checks the length and prefix of token and decodes it into buf,
// which must hold the prefix and f.maxRaw bytes. It returns the payload,
// which starts with the key ID; the signature stays after it in buf for
// checkSignature. Its errors wrap ErrMalformed.
func (f *format) decode(buf []byte, token string) ([]byte, error) {
	oneLength := f.minRaw == f.maxRaw
	if len(token) > f.maxLen || oneLength && len(token) != f.maxLen || !strings.HasPrefix(token, f.prefix) {
		return nil, f.errLength
	}
	p := copy(buf, f.prefix)
	n, ok := decodeBase32(buf[p:], token[p:])
	if !ok || n < f.minRaw || n > f.maxRaw {
		return nil, f.errBase32
	}
	return buf[p : p+n-ed25519.SignatureSize], nil
}

// checkSignature looks up the key payload names in keys and checks the
// signature after payload in buf, as decode left them. A Verify function
// calls it once the payload's own rules hold, so that a malformed token is
// ErrMalformed whatever its key. Its errors wrap ErrUnknownKey or
// ErrBadSignature.
func (f *format) checkSignature(buf, payload []byte, keys KeySet) error {
	var id [2 * keyIDSize]byte
	hex.Encode(id[:], payload[:keyIDSize])
	pub, ok := keys[string(id[:])]
	if !ok {
		return fmt.Errorf(f.keyFormat, string(id[:]), ErrUnknownKey)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf(f.sizeFormat, string(id[:]), len(pub), ErrUnknownKey)
	}
	end := len(f.prefix) + len(payload)
	if !ed25519.Verify(pub, buf[:end], buf[end:end+ed25519.SignatureSize]) {
		return fmt.Errorf(f.keyFormat, string(id[:]), ErrBadSignature)
	}
	return nil
}
