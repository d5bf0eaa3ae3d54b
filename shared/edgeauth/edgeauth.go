// Package edgeauth signs and verifies the HTTPS requests a site appliance
// makes to the cloud with its Ed25519 identity key (DESIGN.md, "Appliance
// lifecycle"): enrolment polls, configuration and release downloads. The
// key never leaves the appliance; the cloud knows its public half from the
// enrolment the installer claimed.
//
// A signed request carries three headers:
//
//	Svc-Edge-Key:       the public key, base64url without padding (43 characters)
//	Svc-Edge-Time:      the appliance's clock, Unix seconds
//	Svc-Edge-Signature: base64url Ed25519 signature of the canonical text
//
// The canonical text is "svc-edge-v1\n" + METHOD + "\n" + path?query +
// "\n" + time + "\n" + hex SHA-256 of the body. A request older or newer
// than MaxSkew by the verifier's clock is refused, which bounds replay;
// the verifier reports the skew so that a wrong appliance clock is shown.
//
// It may import only the standard library.
package edgeauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Header names.
const (
	HeaderKey       = "Svc-Edge-Key"
	HeaderTime      = "Svc-Edge-Time"
	HeaderSignature = "Svc-Edge-Signature"
)

// MaxSkew is how far a request's time may be from the verifier's clock.
const MaxSkew = 5 * time.Minute

// MaxBody is the largest body Verify reads to hash.
const MaxBody = 1 << 20

// Errors of Verify.
var (
	// ErrMissing is returned when a request carries no signature headers.
	ErrMissing = errors.New("edgeauth: the request is not signed")
	// ErrMalformed is returned when a header does not parse.
	ErrMalformed = errors.New("edgeauth: a signature header is malformed")
	// ErrSkew is returned when the request's time is more than MaxSkew
	// from the verifier's clock.
	ErrSkew = errors.New("edgeauth: the appliance's clock is too far from the cloud's")
	// ErrBadSignature is returned when the signature does not verify.
	ErrBadSignature = errors.New("edgeauth: the signature does not verify")
)

var b64 = base64.RawURLEncoding

func canonical(method, uri string, at int64, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte("svc-edge-v1\n" + method + "\n" + uri + "\n" + strconv.FormatInt(at, 10) + "\n" + hex.EncodeToString(sum[:]))
}

// EncodeKey is a public key as the Svc-Edge-Key header carries it.
func EncodeKey(pub ed25519.PublicKey) string { return b64.EncodeToString(pub) }

// DecodeKey reads a public key from its header form.
func DecodeKey(s string) (ed25519.PublicKey, error) {
	b, err := b64.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %s is not a base64url Ed25519 public key", ErrMalformed, HeaderKey)
	}
	return ed25519.PublicKey(b), nil
}

// Sign signs req, whose body is body (nil for none), with priv at now.
// It sets req's body to a reader of body.
func Sign(req *http.Request, body []byte, priv ed25519.PrivateKey, now time.Time) {
	at := now.Unix()
	sig := ed25519.Sign(priv, canonical(req.Method, req.URL.RequestURI(), at, body))
	req.Header.Set(HeaderKey, EncodeKey(priv.Public().(ed25519.PublicKey)))
	req.Header.Set(HeaderTime, strconv.FormatInt(at, 10))
	req.Header.Set(HeaderSignature, b64.EncodeToString(sig))
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
	}
}

// Signed is a verified request: the appliance's public key, its body, and
// how far its clock is ahead of the verifier's (negative: behind).
type Signed struct {
	Key  ed25519.PublicKey
	Body []byte
	Skew time.Duration
}

// Verify checks req's signature at now, reading (at most MaxBody of) its
// body, which it returns. The caller decides whether the key is one it
// knows. It returns ErrMissing, ErrMalformed, ErrSkew (with Signed.Skew
// set) or ErrBadSignature.
func Verify(req *http.Request, now time.Time) (Signed, error) {
	k, t, s := req.Header.Get(HeaderKey), req.Header.Get(HeaderTime), req.Header.Get(HeaderSignature)
	if k == "" && t == "" && s == "" {
		return Signed{}, ErrMissing
	}
	pub, err := DecodeKey(k)
	if err != nil {
		return Signed{}, err
	}
	at, err := strconv.ParseInt(t, 10, 64)
	if err != nil || at <= 0 {
		return Signed{}, fmt.Errorf("%w: %s is not Unix seconds", ErrMalformed, HeaderTime)
	}
	sig, err := b64.DecodeString(s)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Signed{}, fmt.Errorf("%w: %s is not a base64url Ed25519 signature", ErrMalformed, HeaderSignature)
	}
	out := Signed{Key: pub, Skew: time.Unix(at, 0).Sub(now.Truncate(time.Second))}
	if out.Skew > MaxSkew || out.Skew < -MaxSkew {
		return out, fmt.Errorf("%w: %s", ErrSkew, out.Skew)
	}
	var body []byte
	if req.Body != nil {
		body, err = io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
		if err != nil {
			return out, fmt.Errorf("edgeauth: read body: %w", err)
		}
		if len(body) > MaxBody {
			return out, fmt.Errorf("%w: the body is over %d bytes", ErrMalformed, MaxBody)
		}
	}
	if !ed25519.Verify(pub, canonical(req.Method, req.URL.RequestURI(), at, body), sig) {
		return out, ErrBadSignature
	}
	out.Body = body
	return out, nil
}
