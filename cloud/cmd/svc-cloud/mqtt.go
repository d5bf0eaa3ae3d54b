package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/edgesync"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// edgeBroker is how an edge reaches the broker svc-cloud uses: what an
// edge's configuration file names (its URL, and the CA that verifies it,
// PEM, or none for plain MQTT or the system's roots).
type edgeBroker struct {
	URL string
	CA  []byte
}

// syncParts returns the parts that connect svc-cloud to its edges: the
// embedded broker unless an external one is configured, and the cloud half
// of the sync. Each is a Run(ctx) error. state is the cloud half's
// state (connected, counters); nil with --mqtt-url off.
func syncParts(ctx context.Context, cfg *Config, svc *cloud.Service, log *slog.Logger) (parts []func(context.Context) error, eb edgeBroker, state func() mqttsync.CloudState, err error) {
	if cfg.MQTTURL == "off" {
		return nil, edgeBroker{}, nil, nil
	}
	url, user, pass := cfg.MQTTURL, cfg.MQTTUsername, cfg.MQTTPassword
	var ca []byte
	if cfg.MQTTCA != "" {
		if ca, err = readCA(cfg.MQTTCA); err != nil {
			return nil, edgeBroker{}, nil, fmt.Errorf("--mqtt-ca: %w", err)
		}
	}
	eb = edgeBroker{URL: url, CA: ca}
	if url == "" {
		p, err := edgesync.CloudPassword(ctx, svc)
		if err != nil {
			return nil, edgeBroker{}, nil, err
		}
		bc := broker.Config{Listen: cfg.MQTTListen, TLSListen: cfg.MQTTTLSListen, Auth: edgesync.Authenticator(svc, p),
			Revoked: svc.RevokedEdges, Logger: log.With("part", "broker")}
		if cfg.MQTTTLSListen != "" {
			if bc.TLS, ca, err = brokerTLS(cfg, log); err != nil {
				return nil, edgeBroker{}, nil, err
			}
		}
		b, err := broker.New(bc)
		if err != nil {
			return nil, edgeBroker{}, nil, fmt.Errorf("embedded broker: %w (set --mqtt-listen and --mqtt-tls-listen, or --mqtt-url for an external broker)", err)
		}
		parts = append(parts, b.Run)
		user, pass = edgesync.CloudUsername, p
		// The cloud's own half takes the plain listener on loopback when
		// there is one; edges take TLS when there is one.
		if b.Addr() != "" {
			url = "tcp://" + b.Addr()
		} else {
			url = "ssl://" + local(b.TLSAddr())
		}
		eb = edgeBroker{URL: url}
		if b.TLSAddr() != "" {
			eb = edgeBroker{URL: "ssl://" + local(b.TLSAddr()), CA: ca}
		}
	}
	if cfg.MQTTEdgeURL != "" {
		eb.URL = cfg.MQTTEdgeURL
	}
	var tc *tls.Config
	if strings.HasPrefix(url, "ssl://") || strings.HasPrefix(url, "wss://") {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if len(ca) > 0 {
			tc.RootCAs = x509.NewCertPool()
			tc.RootCAs.AppendCertsFromPEM(ca)
		}
	}
	half, err := mqttsync.NewCloud(mqttsync.CloudConfig{
		BrokerURL: url, Username: user, Password: pass, TLS: tc,
		// The instance names the process in its log lines too, so the
		// broker's log and the cloud's can be matched.
		ClientID: "svc-cloud-" + cfg.Instance,
		Filters:  cfg.mqttFilters(),
		Store:    edgesync.Store{Service: svc}, Logger: log.With("part", "sync"),
	})
	if err != nil {
		return nil, edgeBroker{}, nil, err
	}
	svc.OnChange(half.Notify)
	parts = append(parts, half.Run)
	if cfg.MQTTDynsecUsername != "" {
		ctl, err := brokerAccounts(cfg, svc)
		if err != nil {
			return nil, edgeBroker{}, nil, err
		}
		r := &edgesync.Reconciler{Service: svc, Control: ctl, CloudUsername: cfg.MQTTUsername, CloudPassword: cfg.MQTTPassword,
			Every: cfg.MQTTDynsecEvery, Log: log.With("part", "accounts")}
		parts = append(parts, func(ctx context.Context) error {
			defer ctl.Close()
			return r.Run(ctx)
		})
	}
	return parts, eb, half.State, nil
}

// brokerAccounts makes svc keep the edges' accounts at the external
// Mosquitto (--mqtt-url) through its dynamic security plugin, as
// --mqtt-dynsec-username, and returns the plugin's control. It connects
// when first used.
func brokerAccounts(cfg *Config, svc *cloud.Service) (*dynsec.Control, error) {
	dc := dynsec.Config{BrokerURL: cfg.MQTTURL, Username: cfg.MQTTDynsecUsername, Password: cfg.MQTTDynsecPassword}
	if strings.HasPrefix(cfg.MQTTURL, "ssl://") || strings.HasPrefix(cfg.MQTTURL, "wss://") {
		dc.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if cfg.MQTTCA != "" {
			ca, err := readCA(cfg.MQTTCA)
			if err != nil {
				return nil, fmt.Errorf("--mqtt-ca: %w", err)
			}
			dc.TLS.RootCAs = x509.NewCertPool()
			dc.TLS.RootCAs.AppendCertsFromPEM(ca)
		}
	}
	instance := cfg.Instance
	if instance == "" { // a one-shot command
		instance = newInstance()
	}
	dc.ClientID = "svc-cloud-dynsec-" + instance
	ctl, err := dynsec.New(dc)
	if err != nil {
		return nil, err
	}
	svc.SetBrokerAccounts(edgesync.Accounts{Control: ctl})
	return ctl, nil
}

// brokerTLS is the embedded broker's TLS configuration and the CA that
// verifies it: the configured certificate (its file's certificates stand
// for the CA: the cloud's own half trusts them), or the CA and certificate
// kept under DATA/tls, made or renewed as broker.EnsureCerts says.
func brokerTLS(cfg *Config, log *slog.Logger) (*tls.Config, []byte, error) {
	if cfg.MQTTTLSCert != "" {
		tc, err := broker.ServerTLS(cfg.MQTTTLSCert, cfg.MQTTTLSKey)
		if err != nil {
			return nil, nil, err
		}
		ca, err := readCA(cfg.MQTTTLSCert)
		return tc, ca, err
	}
	if err := secureDataDir(cfg.DataDir, log); err != nil {
		return nil, nil, err
	}
	certs, err := broker.EnsureCerts(cfg.tlsDir(), certHosts(cfg), time.Now())
	if err != nil {
		return nil, nil, err
	}
	for _, f := range certs.Made {
		log.Info("made a broker TLS file", "path", f)
	}
	tc, err := broker.ServerTLS(certs.CertFile, certs.KeyFile)
	return tc, certs.CA, err
}

// certHosts are the names and addresses the made certificate covers
// beside localhost: --mqtt-tls-hosts, --mqtt-edge-url's host, the TLS
// listener's host, and when it listens on every interface this machine's
// name and addresses.
func certHosts(cfg *Config) []string {
	var hosts []string
	if u, err := url.Parse(cfg.MQTTEdgeURL); cfg.MQTTEdgeURL != "" && err == nil && u.Hostname() != "" {
		hosts = append(hosts, u.Hostname())
	}
	for _, h := range strings.Split(cfg.MQTTTLSHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	host, _, _ := net.SplitHostPort(cfg.MQTTTLSListen)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return append(hosts, host)
	}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLinkLocalUnicast() {
				hosts = append(hosts, n.IP.String())
			}
		}
	}
	return hosts
}

// local is a listener's address as a client on this machine dials it:
// a listener on every interface (0.0.0.0, ::) is reached at 127.0.0.1,
// which the made certificate names.
func local(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// readCA reads a PEM file of certificates.
func readCA(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return b, nil
}
