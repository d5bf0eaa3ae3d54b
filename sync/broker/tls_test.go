package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
)

// startTLS runs a broker with only a TLS listener, on certificates made in
// a temporary directory, and returns it with the CA's PEM.
func startTLS(t *testing.T, auth broker.Authenticator) (*broker.Broker, []byte) {
	t.Helper()
	certs, err := broker.EnsureCerts(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	tc, err := broker.ServerTLS(certs.CertFile, certs.KeyFile)
	require.NoError(t, err)
	b, err := broker.New(broker.Config{TLSListen: "127.0.0.1:0", TLS: tc, Auth: auth, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Empty(t, b.Addr(), "no plain listener")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return b, certs.CA
}

func dialTLS(t *testing.T, addr string, roots *x509.CertPool, user string) error {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker("ssl://" + addr).SetClientID(ids.New(ids.Edge)).
		SetUsername(user).SetPassword("secret-" + user).SetProtocolVersion(4).SetAutoReconnect(false).
		SetConnectTimeout(5 * time.Second).SetTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	c := paho.NewClient(opts)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(10*time.Second))
	if err := tok.Error(); err != nil {
		return err
	}
	c.Disconnect(0)
	return nil
}

// TestTLS_ClientsVerifyTheBroker: a client holding the broker's CA
// connects over TLS; one with the system's roots, or with another CA,
// does not get as far as MQTT.
func TestTLS_ClientsVerifyTheBroker(t *testing.T) {
	b, ca := startTLS(t, users{"svc-cloud": {Cloud: true}})
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	require.NoError(t, dialTLS(t, b.TLSAddr(), pool, "svc-cloud"), "with the CA")

	other, err := broker.EnsureCerts(t.TempDir(), nil, time.Now())
	require.NoError(t, err)
	otherPool := x509.NewCertPool()
	require.True(t, otherPool.AppendCertsFromPEM(other.CA))
	for name, roots := range map[string]*x509.CertPool{"the system's roots": nil, "another CA": otherPool} {
		err := dialTLS(t, b.TLSAddr(), roots, "svc-cloud")
		var unknown x509.UnknownAuthorityError
		require.ErrorAs(t, err, &unknown, "%s: %v", name, err)
	}
	_, err = dialAddr(t, b.TLSAddr(), connOpts{clientID: "svc-cloud-1", user: "svc-cloud"})
	require.Error(t, err, "plain MQTT to the TLS listener")
}

// TestEnsureCerts: the files are private, a second call keeps them, new
// hosts renew the broker's certificate under the same CA, and a damaged CA
// is an error rather than a new CA edges would not trust.
func TestEnsureCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	first, err := broker.EnsureCerts(dir, []string{"broker.example.com", "192.0.2.7"}, now)
	require.NoError(t, err)
	require.Len(t, first.Made, 4)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 4)
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), e.Name())
	}
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	pair, err := tls.LoadX509KeyPair(first.CertFile, first.KeyFile)
	require.NoError(t, err)
	leaf := pair.Leaf
	require.ElementsMatch(t, []string{"localhost", "broker.example.com"}, leaf.DNSNames)
	require.Len(t, leaf.IPAddresses, 3)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(first.CA))
	for _, name := range []string{"localhost", "broker.example.com", "127.0.0.1", "::1", "192.0.2.7"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		require.NoError(t, err, name)
	}

	again, err := broker.EnsureCerts(dir, []string{"broker.example.com"}, now.Add(time.Hour))
	require.NoError(t, err)
	require.Empty(t, again.Made, "nothing to renew")
	require.Equal(t, first.CA, again.CA)

	renewed, err := broker.EnsureCerts(dir, []string{"mqtt.example.org"}, now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{first.CertFile, first.KeyFile}, renewed.Made, "a new host: a new certificate, the same CA")
	require.Equal(t, first.CA, renewed.CA)

	late, err := broker.EnsureCerts(dir, []string{"mqtt.example.org"}, now.Add(broker.CertValidity-24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{first.CertFile, first.KeyFile}, late.Made, "renewed near its end")

	require.NoError(t, os.WriteFile(filepath.Join(dir, broker.CAFile), []byte("damaged"), 0o600))
	_, err = broker.EnsureCerts(dir, nil, now)
	require.Error(t, err, "a damaged CA is not replaced")
}
