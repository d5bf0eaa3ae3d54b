// Package release is what a signed update is made of (DESIGN.md,
// "Appliance lifecycle"): the manifest that describes a bundle (version,
// architecture, kind, size, SHA-256, when it was made), signed with an
// Ed25519 release key whose public half is built into the appliance, and
// the key files the cloud's `svc-cloud releases` commands use.
//
// A signed manifest travels as an Envelope:
//
//	{"manifest": "<base64url of the manifest's JSON bytes>",
//	 "key_id":   "<16 hex digits: the start of SHA-256 of the public key>",
//	 "signature":"<base64url Ed25519 signature of those bytes, with the
//	              prefix "svc-release-v1\n">"}
//
// The signature covers the manifest's exact bytes, so nothing depends on
// how a JSON encoder orders or spaces fields; the prefix keeps a release
// key's signature from meaning anything elsewhere. Parsing is strict: an
// unknown field, a missing one, an architecture or kind this package does
// not know, or a size out of range is an error naming it.
//
// It may import the standard library and shared/keyfile.
package release

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Format is the manifest's "format" value.
const Format = "svc-release-v1"

// signingPrefix is what a release key signs before the manifest's bytes.
const signingPrefix = "svc-release-v1\n"

// MaxSize bounds a bundle: a svc-edge binary is about 30 MB, a root
// filesystem image (the image issue) a few hundred.
const MaxSize = 2 << 30

// maxEnvelope bounds a signed manifest's JSON.
const maxEnvelope = 8 << 10

// Kinds of bundle.
const (
	// KindBinary is a svc-edge executable, installed into a directory
	// slot (edge/update's Dir).
	KindBinary = "binary"
	// KindRootfs is a root filesystem image for an A/B partition slot (the
	// image issue); no slot of this issue installs it.
	KindRootfs = "rootfs"
)

// Errors of Parse and Verify.
var (
	// ErrMalformed is returned when a manifest or an envelope does not
	// parse or breaks a rule; the error names the field.
	ErrMalformed = errors.New("release: malformed manifest")
	// ErrUntrusted is returned when no trusted key has the envelope's key ID.
	ErrUntrusted = errors.New("release: the manifest is signed by a key this appliance does not trust")
	// ErrBadSignature is returned when the signature does not verify.
	ErrBadSignature = errors.New("release: the manifest's signature does not verify")
	// ErrMismatch is returned by Check when a bundle is not the one the
	// manifest describes (its size or SHA-256).
	ErrMismatch = errors.New("release: the bundle does not match its manifest")
	// ErrNoTrustedKey is returned by callers that need a trusted key when
	// the build has none (TrustedKeys is empty).
	ErrNoTrustedKey = errors.New("release: this build trusts no release key: it cannot update")
)

// Manifest describes one bundle.
type Manifest struct {
	Format string `json:"format"`
	// Version is the release's version, as svc-edge reports it: 1 to 64
	// of letters, digits and ".+-_", starting with a letter or digit.
	Version string `json:"version"`
	// Arch is the GOARCH the bundle runs on (amd64, arm64, arm); ARM is
	// GOARM ("6" or "7") for arm, empty otherwise.
	Arch string `json:"arch"`
	ARM  string `json:"arm,omitempty"`
	// Kind is KindBinary or KindRootfs.
	Kind string `json:"kind"`
	// Size is the bundle's length in bytes, 1 to MaxSize.
	Size int64 `json:"size"`
	// SHA256 is the bundle's hash, 64 lowercase hex digits.
	SHA256    string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
}

var versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

// ValidVersion reports whether v is a release version: it names files and
// URL path segments, so it holds no slash and no dot-dot.
func ValidVersion(v string) bool { return versionRE.MatchString(v) && !strings.Contains(v, "..") }

// Validate names the first field that breaks a rule.
func (m Manifest) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
	}
	switch {
	case m.Format != Format:
		return bad("format %q, not %q", m.Format, Format)
	case !ValidVersion(m.Version):
		return bad("version %q: 1 to 64 letters, digits and .+-_", m.Version)
	case m.Kind != KindBinary && m.Kind != KindRootfs:
		return bad("kind %q: %s or %s", m.Kind, KindBinary, KindRootfs)
	case m.Size < 1 || m.Size > MaxSize:
		return bad("size %d: 1 to %d bytes", m.Size, int64(MaxSize))
	case len(m.SHA256) != 64 || strings.ToLower(m.SHA256) != m.SHA256:
		return bad("sha256 %q: 64 lowercase hex digits", m.SHA256)
	case m.CreatedAt.IsZero():
		return bad("created_at is missing")
	}
	if _, err := hex.DecodeString(m.SHA256); err != nil {
		return bad("sha256 %q: 64 lowercase hex digits", m.SHA256)
	}
	return ValidArch(m.Arch, m.ARM)
}

// ValidArch checks an architecture as a manifest names it.
func ValidArch(arch, arm string) error {
	switch {
	case arch == "arm" && (arm == "6" || arm == "7"):
		return nil
	case arch == "arm":
		return fmt.Errorf("%w: arm %q: 6 or 7 for arch arm", ErrMalformed, arm)
	case arch != "amd64" && arch != "arm64":
		return fmt.Errorf("%w: arch %q: amd64, arm64 or arm", ErrMalformed, arch)
	case arm != "":
		return fmt.Errorf("%w: arm %q: only for arch arm", ErrMalformed, arm)
	}
	return nil
}

// Platform is the architecture as a manifest names it: "arm64", or
// "arm/7" for arm with GOARM 7.
func (m Manifest) Platform() string {
	if m.ARM != "" {
		return m.Arch + "/" + m.ARM
	}
	return m.Arch
}

// Check reads a bundle and reports whether it is the one m describes:
// ErrMismatch naming the size or the hash, or the reader's error.
func (m Manifest) Check(r io.Reader) error {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, m.Size+1))
	if err != nil {
		return fmt.Errorf("release: read bundle: %w", err)
	}
	if n != m.Size {
		return fmt.Errorf("%w: %d bytes, the manifest says %d", ErrMismatch, n, m.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != m.SHA256 {
		return fmt.Errorf("%w: SHA-256 %s, the manifest says %s", ErrMismatch, got, m.SHA256)
	}
	return nil
}

// Describe makes the manifest of the bundle r, reading it whole.
func Describe(r io.Reader, version, arch, arm, kind string, now time.Time) (Manifest, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(r, MaxSize+1))
	if err != nil {
		return Manifest{}, fmt.Errorf("release: read bundle: %w", err)
	}
	m := Manifest{Format: Format, Version: version, Arch: arch, ARM: arm, Kind: kind, Size: n,
		SHA256: hex.EncodeToString(h.Sum(nil)), CreatedAt: now.UTC().Truncate(time.Second)}
	return m, m.Validate()
}

// Envelope is a manifest's bytes with their signature.
type Envelope struct {
	Manifest  string `json:"manifest"`
	KeyID     string `json:"key_id"`
	Signature string `json:"signature"`
}

var b64 = base64.RawURLEncoding

// KeyID names a public key: 16 hex digits of its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign validates m and signs it with priv.
func Sign(m Manifest, priv ed25519.PrivateKey) (Envelope, error) {
	if err := m.Validate(); err != nil {
		return Envelope{}, err
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return Envelope{}, fmt.Errorf("release: %w", err)
	}
	sig := ed25519.Sign(priv, append([]byte(signingPrefix), raw...))
	return Envelope{Manifest: b64.EncodeToString(raw), KeyID: KeyID(priv.Public().(ed25519.PublicKey)), Signature: b64.EncodeToString(sig)}, nil
}

// ParseEnvelope reads a signed manifest's JSON strictly. It does not
// verify the signature (Verify does).
func ParseEnvelope(data []byte) (Envelope, error) {
	if len(data) > maxEnvelope {
		return Envelope{}, fmt.Errorf("%w: the signed manifest is over %d bytes", ErrMalformed, maxEnvelope)
	}
	var e Envelope
	if err := strictJSON(data, &e); err != nil {
		return Envelope{}, fmt.Errorf("%w: signed manifest: %v", ErrMalformed, err)
	}
	switch {
	case e.Manifest == "":
		return Envelope{}, fmt.Errorf("%w: manifest is missing", ErrMalformed)
	case len(e.KeyID) != 16:
		return Envelope{}, fmt.Errorf("%w: key_id %q: 16 hex digits", ErrMalformed, e.KeyID)
	case e.Signature == "":
		return Envelope{}, fmt.Errorf("%w: signature is missing", ErrMalformed)
	}
	return e, nil
}

// Verify checks e's signature with the trusted key of its key ID and
// returns its manifest, validated. Errors: ErrUntrusted, ErrBadSignature,
// ErrMalformed naming the field.
func (e Envelope) Verify(trusted []ed25519.PublicKey) (Manifest, error) {
	raw, err := b64.DecodeString(e.Manifest)
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: manifest is not base64url", ErrMalformed)
	}
	sig, err := b64.DecodeString(e.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return Manifest{}, fmt.Errorf("%w: signature is not a base64url Ed25519 signature", ErrMalformed)
	}
	var key ed25519.PublicKey
	for _, k := range trusted {
		if KeyID(k) == e.KeyID {
			key = k
		}
	}
	if key == nil {
		return Manifest{}, fmt.Errorf("%w (key %s)", ErrUntrusted, e.KeyID)
	}
	if !ed25519.Verify(key, append([]byte(signingPrefix), raw...), sig) {
		return Manifest{}, ErrBadSignature
	}
	var m Manifest
	if err := strictJSON(raw, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return m, m.Validate()
}

// Marshal is e's JSON.
func (e Envelope) Marshal() []byte {
	b, _ := json.Marshal(e) // three strings
	return b
}

// strictJSON decodes one JSON object with no unknown fields and nothing
// after it.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the object")
	}
	return nil
}
