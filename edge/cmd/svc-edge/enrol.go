package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/enrol"
)

// enrolFlags are the flags of svc-edge enrol, which svc-edge run takes too
// (run enrols an appliance that has no configuration when given --cloud).
type enrolFlags struct {
	cloud, data, ca, kiosk, language string
	readerPort                       int
}

func (f *enrolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cloud, "cloud", env("SVC_EDGE_CLOUD", ""), "the cloud's URL, https://... (env SVC_EDGE_CLOUD)")
	fs.StringVar(&f.data, "data", env("SVC_EDGE_DATA_DIR", config.DefaultDataDir), "the data directory: the identity key, the cache (env SVC_EDGE_DATA_DIR)")
	fs.StringVar(&f.ca, "ca", env("SVC_EDGE_CLOUD_CA", ""), "PEM file of the CA that verifies the cloud's HTTPS certificate; empty: the system's roots (env SVC_EDGE_CLOUD_CA)")
	fs.StringVar(&f.kiosk, "kiosk-listen", env("SVC_EDGE_KIOSK_LISTEN", "0.0.0.0:8088"), "the reception kiosk's address on the LAN in the configuration written; \"none\" for no kiosk (env SVC_EDGE_KIOSK_LISTEN)")
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
	listen := fs.String("listen", env("SVC_EDGE_LISTEN", config.DefaultListen), "the local status page's address while enrolling (env SVC_EDGE_LISTEN)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("enrol: unexpected argument %q", fs.Arg(0))}
	}
	if _, err := os.Stat(*path); err == nil {
		return fmt.Errorf("enrol: %s exists: the appliance is enrolled (to enrol it again, revoke its edge in the cloud and move the file aside)", *path)
	}
	return enrolAppliance(ctx, f, *path, *listen, stdout, stderr)
}

// enrolAppliance enrols the appliance and writes its configuration at
// path, serving the status page on listen meanwhile.
func enrolAppliance(ctx context.Context, f enrolFlags, path, listen string, stdout, stderr io.Writer) error {
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
	log := slog.New(slog.NewTextHandler(stderr, nil))
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := statusPage(c, listen)
	if err != nil {
		log.Warn("no local status page while enrolling", "error", err.Error())
	} else {
		go func() { <-ctx.Done(); _ = srv.Close() }()
	}
	r, err := c.Run(ctx)
	if err != nil {
		return err
	}
	local := enrol.Local{DataDir: f.data, Listen: listen, Kiosk: f.kiosk, Language: f.language, ReaderPort: f.readerPort}
	if local.Kiosk == "none" {
		local.Kiosk = ""
	}
	if local.Language == "none" {
		local.Language = ""
	}
	if err := enrol.WriteConfig(path, r, local); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enrolled as %s (%s) at site %s (%s); configuration written to %s\n", r.EdgeID, r.Name, r.SiteName, r.Site.SiteID, path)
	return nil
}

// statusPage serves the enrolment's status on the loopback API's address
// while the appliance is not enrolled: GET /status (JSON) and GET / (a
// page a screen attached to the appliance can show).
func statusPage(c *enrol.Client, listen string) (*http.Server, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Enrolment enrol.Status `json:"enrolment"`
		}{c.Status()})
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Refresh", "5")
		_ = enrolPage.Execute(w, c.Status())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return srv, nil
}

var enrolPage = template.Must(template.New("enrol").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Enrol this appliance</title></head>
<body style="font-family: sans-serif; text-align: center; margin-top: 10vh">
<h1>Enrol this appliance</h1>
{{if .Code}}<p>Enrolment code</p><p style="font-size: 4rem; letter-spacing: .2em; font-family: monospace">{{.Code}}</p>
<p>Valid until {{.ExpiresAt.Format "15:04"}} UTC. Claim it for a site in the console or with POST /v1/edges.</p>
{{else}}<p>State: {{.State}}</p>{{end}}
{{if .SkewWarn}}<p><strong>This appliance's clock is {{printf "%.0f" .Skew}} seconds from the cloud's: set its time.</strong></p>{{end}}
{{if .Error}}<p>Last problem (retrying): {{.Error}}</p>{{end}}
<p>Cloud: {{.Cloud}}</p>
</body></html>
`))
