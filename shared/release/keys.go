package release

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"
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

// pemType is the key file's PEM block: PKCS #8, as openssl writes it.
const pemType = "PRIVATE KEY"

// WriteKeyFile makes a release key and writes its private half to path
// with mode 0600, refusing to replace a file. It returns the public half.
func WriteKeyFile(path string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, fmt.Errorf("release: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("release: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("release: key file: %w", err)
	}
	err = pem.Encode(f, &pem.Block{Type: pemType, Bytes: der})
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("release: write key file %s: %w", path, err)
	}
	return pub, nil
}

// ReadKeyFile reads a private key WriteKeyFile wrote. It refuses a file
// that others can read, as ssh does.
func ReadKeyFile(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("release: key file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("release: key file %s is readable by others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("release: key file: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != pemType {
		return nil, fmt.Errorf("release: key file %s: not a PEM %q block", path, pemType)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("release: key file %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("release: key file %s: %T, not an Ed25519 key", path, k)
	}
	return priv, nil
}
