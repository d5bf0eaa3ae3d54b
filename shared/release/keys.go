package release

import (
	"crypto/ed25519"
	"fmt"
	"io/fs"
	"strings"

	"github.com/svc-vms/svc/shared/keyfile"
)

// TrustedKeys are the release public keys built into this binary: base64url
// public keys (PublicKeyString) separated by commas. A production build
// sets it with
//
//	go build -ldflags "-X github.com/svc-vms/svc/shared/release.TrustedKeys=KEY1,KEY2"
//
// where KEY is what `svc-cloud releases keygen` printed; two keys let a
// fleet move to a new key (sign with the new one once every appliance
// runs a build that trusts both). Empty, as in a plain `go build`, the
// appliance trusts no release and does not update. The private halves
// live with whoever publishes releases, never in the repository.
var TrustedKeys = ""

// Trusted parses TrustedKeys. It returns an error naming a key that does
// not parse, and no keys (no error) when none is built in.
func Trusted() ([]ed25519.PublicKey, error) { return ParsePublicKeys(TrustedKeys) }

// ParsePublicKeys parses comma-separated base64url public keys.
func ParsePublicKeys(s string) ([]ed25519.PublicKey, error) {
	var out []ed25519.PublicKey
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		b, err := b64.DecodeString(k)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("release: trusted key %q is not a base64url Ed25519 public key", k)
		}
		out = append(out, ed25519.PublicKey(b))
	}
	return out, nil
}

// PublicKeyString is a public key as TrustedKeys lists it.
func PublicKeyString(pub ed25519.PublicKey) string { return b64.EncodeToString(pub) }

// WriteKeyFile makes a release key and writes its private half to path
// with mode 0600, durably, refusing to replace a file (shared/keyfile,
// as the appliances' own keys). It returns the public half.
func WriteKeyFile(path string) (ed25519.PublicKey, error) {
	priv, created, err := keyfile.Open(path, nil)
	switch {
	case err != nil:
		return nil, fmt.Errorf("release: %w", err)
	case !created:
		return nil, fmt.Errorf("release: key file %s: %w: not replaced", path, fs.ErrExist)
	}
	return priv.Public().(ed25519.PublicKey), nil
}

// ReadKeyFile reads a private key WriteKeyFile wrote. It refuses a file
// that others can read, as ssh does.
func ReadKeyFile(path string) (ed25519.PrivateKey, error) {
	priv, err := keyfile.Load(path)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	return priv, nil
}
