package broker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The files of a certificate directory (EnsureCerts).
const (
	CAFile   = "ca.crt"
	caKey    = "ca.key"
	certFile = "broker.crt"
	keyFile  = "broker.key"
)

// Validity of what EnsureCerts makes: the CA for years (every edge's
// configuration carries it), the broker's certificate for two years,
// renewed at a start within 30 days of its end or when the hosts change.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 2 * 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// Certs are the CA and the broker certificate EnsureCerts keeps in a
// directory.
type Certs struct {
	// CA is the CA certificate, PEM: what an edge needs to verify the
	// broker (edge/config's broker.ca).
	CA []byte
	// CertFile and KeyFile are the broker's certificate and key.
	CertFile, KeyFile string
	// Made lists the files written by this call (none when all were
	// current).
	Made []string
}

// EnsureCerts keeps in dir (made 0700) a private CA (ECDSA P-256, valid
// CAValidity) and a broker certificate it signs (valid CertValidity) for
// localhost, 127.0.0.1, ::1 and hosts (names or IP addresses). A missing CA
// is made, with a new broker certificate; a broker certificate missing,
// unreadable, not signed by the CA, within 30 days of its end or not
// covering every host is made again. A CA that exists but is unreadable or
// about to expire is an error: edges trust it, so it is never replaced
// silently. Every file is written mode 0600.
func EnsureCerts(dir string, hosts []string, now time.Time) (Certs, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Certs{}, fmt.Errorf("broker certificates: %w", err)
	}
	c := Certs{CertFile: filepath.Join(dir, certFile), KeyFile: filepath.Join(dir, keyFile)}
	ca, caPriv, err := loadCA(dir, now)
	if errors.Is(err, os.ErrNotExist) {
		ca, caPriv, err = makeCA(dir, now)
		c.Made = append(c.Made, filepath.Join(dir, CAFile), filepath.Join(dir, caKey))
	}
	if err != nil {
		return Certs{}, err
	}
	c.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	names, ips := sans(hosts)
	if leaf, err := loadLeaf(c.CertFile, c.KeyFile); err != nil || !current(leaf, ca, names, ips, now) {
		if err := makeLeaf(c.CertFile, c.KeyFile, ca, caPriv, names, ips, now); err != nil {
			return Certs{}, err
		}
		c.Made = append(c.Made, c.CertFile, c.KeyFile)
	}
	return c, nil
}

// sans are the names and addresses the broker certificate holds.
func sans(hosts []string) ([]string, []net.IP) {
	names := []string{"localhost"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(strings.Trim(h, "[]")); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if !slices.Contains(names, strings.ToLower(h)) {
			names = append(names, strings.ToLower(h))
		}
	}
	return names, ips
}

func loadCA(dir string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKey))
	if err != nil {
		return nil, nil, fmt.Errorf("broker CA: %w (the CA certificate is there without its key)", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("broker CA in %s: %w", dir, err)
	}
	priv, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok || pair.Leaf == nil || !pair.Leaf.IsCA {
		return nil, nil, fmt.Errorf("broker CA in %s: not an ECDSA CA certificate and key", dir)
	}
	if now.Add(renewBefore).After(pair.Leaf.NotAfter) {
		return nil, nil, fmt.Errorf("broker CA in %s ends %s: move the directory aside to make a new one, then give every edge the new %s",
			dir, pair.Leaf.NotAfter.Format(time.DateOnly), CAFile)
	}
	return pair.Leaf, priv, nil
}

func loadLeaf(certPath, keyPath string) (*x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	return pair.Leaf, nil
}

// current reports whether leaf is signed by ca, lasts more than 30 days
// from now and covers every name and address.
func current(leaf, ca *x509.Certificate, names []string, ips []net.IP, now time.Time) bool {
	if leaf == nil || leaf.CheckSignatureFrom(ca) != nil || now.Add(renewBefore).After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return false
	}
	for _, n := range names {
		if !slices.Contains(leaf.DNSNames, n) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

func makeCA(dir string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("broker CA: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "svc-cloud MQTT broker CA", Organization: []string{"svc"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, nil, fmt.Errorf("broker CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("broker CA: %w", err)
	}
	if err := writePEM(filepath.Join(dir, caKey), "EC PRIVATE KEY", ecKey(priv)); err != nil {
		return nil, nil, err
	}
	if err := writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", der); err != nil {
		return nil, nil, err
	}
	return ca, priv, nil
}

func makeLeaf(certPath, keyPath string, ca *x509.Certificate, caPriv *ecdsa.PrivateKey, names []string, ips []net.IP, now time.Time) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("broker certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: names[0], Organization: []string{"svc"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(CertValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names,
		IPAddresses:  ips,
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &priv.PublicKey, caPriv)
	if err != nil {
		return fmt.Errorf("broker certificate: %w", err)
	}
	if err := writePEM(keyPath, "EC PRIVATE KEY", ecKey(priv)); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der)
}

func ecKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return der
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// writePEM writes one PEM block to path, mode 0600, through a rename so a
// crash leaves the old file or the new.
func writePEM(path, typ string, der []byte) error {
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: typ, Bytes: der}); err != nil {
		return err
	}
	tmp := path + ".tmp"
	_ = os.Remove(tmp) // a leftover keeps its mode through WriteFile
	if err := os.WriteFile(tmp, b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("broker certificates: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("broker certificates: %w", err)
	}
	return nil
}

// ServerTLS is the TLS configuration of a listener serving the certificate
// and key in these PEM files (from EnsureCerts, or an operator's own).
func ServerTLS(certPath, keyPath string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("broker TLS: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}
