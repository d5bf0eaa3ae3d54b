package release_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/svc-vms/svc/shared/keyfile"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/release"
)

var now = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

func manifest(t *testing.T, bundle []byte) release.Manifest {
	t.Helper()
	m, err := release.Describe(bytes.NewReader(bundle), "1.2.0", "arm64", "", release.KindBinary, now)
	require.NoError(t, err)
	return m
}

func TestSignVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	bundle := []byte("the svc-edge binary")
	m := manifest(t, bundle)
	env, err := release.Sign(m, priv)
	require.NoError(t, err)

	parsed, err := release.ParseEnvelope(env.Marshal())
	require.NoError(t, err)
	got, err := parsed.Verify([]ed25519.PublicKey{other, pub})
	require.NoError(t, err)
	require.Equal(t, m, got)
	require.NoError(t, got.Check(bytes.NewReader(bundle)))

	_, err = parsed.Verify([]ed25519.PublicKey{other})
	require.ErrorIs(t, err, release.ErrUntrusted)
	_, err = parsed.Verify(nil)
	require.ErrorIs(t, err, release.ErrUntrusted)

	// Another manifest's bytes under this signature: a version changed.
	raw, _ := base64.RawURLEncoding.DecodeString(env.Manifest)
	forged := env
	forged.Manifest = base64.RawURLEncoding.EncodeToString(bytes.Replace(raw, []byte("1.2.0"), []byte("1.2.1"), 1))
	_, err = forged.Verify([]ed25519.PublicKey{pub})
	require.ErrorIs(t, err, release.ErrBadSignature)

	// Signed by a key with the trusted key's ID is impossible; signed by
	// another key claiming the trusted ID does not verify.
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	wrong, err := release.Sign(m, otherPriv)
	require.NoError(t, err)
	wrong.KeyID = env.KeyID
	_, err = wrong.Verify([]ed25519.PublicKey{pub})
	require.ErrorIs(t, err, release.ErrBadSignature)
}

func TestCheck_Mismatch(t *testing.T) {
	bundle := []byte("the svc-edge binary")
	m := manifest(t, bundle)
	for name, b := range map[string][]byte{
		"truncated": bundle[:10],
		"longer":    append(bytes.Clone(bundle), '!'),
		"changed":   bytes.ToUpper(bundle),
	} {
		err := m.Check(bytes.NewReader(b))
		require.ErrorIs(t, err, release.ErrMismatch, name)
	}
	require.ErrorContains(t, m.Check(bytes.NewReader(bundle[:10])), "10 bytes, the manifest says 19")
}

func TestManifest_Validate(t *testing.T) {
	good := manifest(t, []byte("x"))
	for name, tc := range map[string]struct {
		edit func(m *release.Manifest)
		want string
	}{
		"format":      {func(m *release.Manifest) { m.Format = "v0" }, "format"},
		"version":     {func(m *release.Manifest) { m.Version = "../1" }, "version"},
		"dotdot":      {func(m *release.Manifest) { m.Version = "1..2" }, "version"},
		"empty":       {func(m *release.Manifest) { m.Version = "" }, "version"},
		"arch":        {func(m *release.Manifest) { m.Arch = "386" }, "arch"},
		"arm missing": {func(m *release.Manifest) { m.Arch = "arm" }, "arm"},
		"arm on x86":  {func(m *release.Manifest) { m.ARM = "7" }, "arm"},
		"kind":        {func(m *release.Manifest) { m.Kind = "deb" }, "kind"},
		"size":        {func(m *release.Manifest) { m.Size = 0 }, "size"},
		"hash":        {func(m *release.Manifest) { m.SHA256 = strings.ToUpper(m.SHA256) }, "sha256"},
		"hash hex":    {func(m *release.Manifest) { m.SHA256 = strings.Repeat("g", 64) }, "sha256"},
		"created":     {func(m *release.Manifest) { m.CreatedAt = time.Time{} }, "created_at"},
	} {
		m := good
		tc.edit(&m)
		err := m.Validate()
		require.ErrorIs(t, err, release.ErrMalformed, name)
		require.ErrorContains(t, err, tc.want, name)
		_, priv, _ := ed25519.GenerateKey(nil)
		_, err = release.Sign(m, priv)
		require.ErrorIs(t, err, release.ErrMalformed, "%s: nothing invalid is signed", name)
	}
	arm := good
	arm.Arch, arm.ARM = "arm", "7"
	require.NoError(t, arm.Validate())
	require.Equal(t, "arm/7", arm.Platform())
}

func TestParseEnvelope_Strict(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	env, err := release.Sign(manifest(t, []byte("x")), priv)
	require.NoError(t, err)
	for name, data := range map[string]string{
		"not json":  "{",
		"unknown":   `{"manifest":"a","key_id":"0123456789abcdef","signature":"s","extra":1}`,
		"no key id": `{"manifest":"a","signature":"s"}`,
		"trailing":  string(env.Marshal()) + "{}",
		"huge":      `{"manifest":"` + strings.Repeat("a", 9000) + `"}`,
	} {
		_, err := release.ParseEnvelope([]byte(data))
		require.ErrorIs(t, err, release.ErrMalformed, name)
	}
	// A signed manifest with an unknown field is refused after the
	// signature, even though it verifies.
	m := manifest(t, []byte("x"))
	signedExtra := signRaw(t, priv, append(mustJSON(t, m)[:len(mustJSON(t, m))-1], []byte(`,"extra":true}`)...))
	_, err = signedExtra.Verify([]ed25519.PublicKey{pub})
	require.ErrorIs(t, err, release.ErrMalformed)
	require.ErrorContains(t, err, "extra")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// signRaw signs bytes as Sign would, for manifests Sign refuses to make.
func signRaw(t *testing.T, priv ed25519.PrivateKey, raw []byte) release.Envelope {
	t.Helper()
	sig := ed25519.Sign(priv, append([]byte("svc-release-v1\n"), raw...))
	return release.Envelope{Manifest: base64.RawURLEncoding.EncodeToString(raw), KeyID: release.KeyID(priv.Public().(ed25519.PublicKey)),
		Signature: base64.RawURLEncoding.EncodeToString(sig)}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "release.key")
	pub, err := release.WriteKeyFile(path)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	priv, err := release.ReadKeyFile(path)
	require.NoError(t, err)
	require.True(t, pub.Equal(priv.Public()))

	_, err = release.WriteKeyFile(path)
	require.ErrorIs(t, err, os.ErrExist, "a key file is never replaced")

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = release.ReadKeyFile(path)
	require.ErrorContains(t, err, "lets other users read the private key")

	bad := filepath.Join(t.TempDir(), "bad.key")
	require.NoError(t, os.WriteFile(bad, []byte("not pem"), 0o600))
	_, err = release.ReadKeyFile(bad)
	require.ErrorIs(t, err, keyfile.ErrDamaged)

	keys, err := release.ParsePublicKeys(" " + release.PublicKeyString(pub) + ",,")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	_, err = release.ParsePublicKeys("abc")
	require.ErrorContains(t, err, `"abc"`)
	none, err := release.Trusted()
	require.NoError(t, err)
	require.Empty(t, none, "a plain build trusts no key")
	require.False(t, errors.Is(err, release.ErrNoTrustedKey))
}
