package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/enrol"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/logging"
)

// enrolFlags are the flags of svc-edge enrol, which svc-edge run takes too
// (run enrols an appliance that has no configuration when given --cloud).
type enrolFlags struct {
	cloud, data, ca, listen, kiosk, language string
	readerPort                               int
}

func (f *enrolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cloud, "cloud", env("SVC_EDGE_CLOUD", ""), "the cloud's URL, https://... (env SVC_EDGE_CLOUD)")
	fs.StringVar(&f.data, "data", env("SVC_EDGE_DATA_DIR", config.DefaultDataDir), "the data directory: the identity key, the cache (env SVC_EDGE_DATA_DIR)")
	fs.StringVar(&f.ca, "ca", env("SVC_EDGE_CLOUD_CA", ""), "PEM file of the CA that verifies the cloud's HTTPS certificate; empty: the system's roots (env SVC_EDGE_CLOUD_CA)")
	fs.StringVar(&f.listen, "listen", env("SVC_EDGE_LISTEN", config.DefaultListen), "the local API's address in the configuration written, where the status page is served while enrolling (env SVC_EDGE_LISTEN)")
	fs.StringVar(&f.kiosk, "kiosk-listen", env("SVC_EDGE_KIOSK_LISTEN", config.DefaultKioskListen), "the reception kiosk's address on the LAN in the configuration written, where it shows the enrolment code while enrolling; \"none\" for no kiosk (env SVC_EDGE_KIOSK_LISTEN)")
	fs.IntVar(&f.readerPort, "reader-port", config.FirstReaderPort, "the loopback TCP port of the first gate's reader in the configuration written, the next gate's the next")
	fs.StringVar(&f.language, "kiosk-language", env("SVC_EDGE_KIOSK_LANGUAGE", "fr"), "the kiosk's second language beside English; \"none\" for English alone")
}

// enrolCommand is `svc-edge enrol`.
func enrolCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("enrol", "usage: svc-edge enrol --cloud URL [--data DIR] [--ca FILE] [--config FILE]\n"+
		"Makes the appliance's identity key, shows a one-time enrolment code, and waits until an installer claims it\n"+
		"(POST /v1/edges, or svc-cloud edges claim CODE --site ID); then writes the configuration file.")
	var f enrolFlags
	f.register(fs)
	path := fs.String("config", env("SVC_EDGE_CONFIG", defaultConfig), "the configuration file to write (env SVC_EDGE_CONFIG)")
	var lc logging.Config
	lc.Register(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("enrol: unexpected argument %q", fs.Arg(0))}
	}
	if err := lc.Validate(); err != nil {
		return usageError{"enrol: " + err.Error()}
	}
	if _, err := os.Stat(*path); err == nil {
		return fmt.Errorf("enrol: %s exists: the appliance is enrolled (to enrol it again, revoke its edge in the cloud and move the file aside)", *path)
	}
	return enrolAppliance(ctx, f, *path, lc.New(stderr), stdout)
}

// enrolAppliance enrols the appliance and writes its configuration at
// path. Meanwhile it serves the status page on the local API's address
// and the enrolment page on the kiosk's; both are closed when it returns,
// so that the daemon may listen there.
func enrolAppliance(ctx context.Context, f enrolFlags, path string, log *slog.Logger, stdout io.Writer) error {
	u, err := url.Parse(f.cloud)
	switch {
	case f.cloud == "":
		return usageError{"enrol: --cloud is required: the cloud's URL"}
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return usageError{fmt.Sprintf("enrol: --cloud %q: want https://host (or http:// to a cloud on a trusted network)", f.cloud)}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return fmt.Errorf("enrol: --ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("enrol: --ca %s holds no PEM certificate", f.ca)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	key, created, err := enrol.Identity(f.data)
	if err != nil {
		return err
	}
	if created {
		log.Info("made the appliance's identity key", "path", f.data+"/"+enrol.KeyFileName)
	}
	c := &enrol.Client{Cloud: f.cloud, HTTP: client, Key: key, Show: func(st enrol.Status) {
		fmt.Fprintf(stdout, "\nenrolment code: %s   (valid until %s; claim it with POST /v1/edges {\"code\": \"%s\", \"site_id\": ...}\n"+
			"                or svc-cloud edges claim %s --site SITE_ID)\n\n", st.Code, st.ExpiresAt.Local().Format("15:04:05"), st.Code, st.Code)
		if st.SkewWarn {
			fmt.Fprintf(stdout, "warning: this appliance's clock is %.0f s from the cloud's: set it (NTP)\n", st.Skew)
		}
	}}
	local := enrol.Local{DataDir: f.data, Listen: f.listen, Kiosk: f.kiosk, Language: f.language, ReaderPort: f.readerPort}
	if local.Kiosk == "none" {
		local.Kiosk = ""
	}
	if local.Language == "none" {
		local.Language = ""
	}
	page, err := kiosk.EnrolmentHandler(kiosk.EnrolmentConfig{Languages: config.KioskLanguages(local.Language), Logger: log,
		Status: func() kiosk.Enrolment { return kioskEnrolment(c.Status()) }})
	if err != nil {
		return fmt.Errorf("enrol: %w", err)
	}
	if srv, err := serveEnrolment(f.listen, statusPage(c, page)); err != nil {
		log.Warn("no local status page while enrolling", "error", err.Error())
	} else {
		defer srv.Close()
	}
	if local.Kiosk != "" {
		if srv, err := serveEnrolment(local.Kiosk, page); err != nil {
			log.Warn("the kiosk does not show the enrolment code", "error", err.Error())
		} else {
			defer srv.Close()
		}
	}
	r, err := c.Run(ctx)
	if err != nil {
		return err
	}
	if err := enrol.WriteConfig(path, r, local); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enrolled as %s (%s) at site %s (%s); configuration written to %s\n", r.EdgeID, r.Name, r.SiteName, r.Site.SiteID, path)
	return nil
}

// statusPage is the enrolment's status on the loopback API's address
// while the appliance is not enrolled: GET /status (JSON, which svc-cloud
// edges claim --appliance reads) and, for a screen attached to the
// appliance, the kiosk's enrolment page.
func statusPage(c *enrol.Client, page http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Enrolment enrol.Status `json:"enrolment"`
		}{c.Status()})
	})
	mux.Handle("/", page)
	return mux
}

// kioskEnrolment is st as the kiosk shows it.
func kioskEnrolment(st enrol.Status) kiosk.Enrolment {
	return kiosk.Enrolment{Code: st.Code, ExpiresAt: st.ExpiresAt, Claimed: st.State == enrol.StateClaimed, Cloud: st.Cloud,
		Skew: time.Duration(st.Skew * float64(time.Second)), SkewWarning: st.SkewWarn, Problem: st.Error}
}

// serveEnrolment serves h on addr until the server returned is closed.
func serveEnrolment(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once closed
	return srv, nil
}
