package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
)

// edgeConfig is the configuration file of the appliance for edge e at
// the gates, in the order they were made: the one edge/config writes for
// an appliance enrolled by code (config.Initial), with the kiosk on the
// LAN in English and French, and the appliance's default data directory.
func edgeConfig(e cloud.Edge, password string, broker edgeBroker, gates []cloud.Gate) ([]byte, error) {
	in := config.Initial{Site: protocol.Site{Mode: string(e.Tenant.Mode), OrgID: e.Tenant.OrgID, SiteID: e.SiteID}, EdgeID: e.ID,
		Broker: config.Broker{URL: broker.URL, Username: e.Username, Password: password, CA: broker.CA},
		Kiosk:  config.DefaultKioskListen, Language: "fr"}
	for _, g := range gates {
		in.GateIDs = append(in.GateIDs, g.ID)
	}
	return in.Document()
}

func edgesCreate(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("edges create", flag.ContinueOnError)
	cfg.storeFlags(fs)
	cfg.brokerFlags(fs)
	org := fs.String("org", "", "organisation ID")
	mode := fs.String("mode", "", "live or test")
	site := fs.String("site", "", "ID of the site the edge serves")
	name := fs.String("name", cloud.DefaultEdgeName, "name of the edge")
	brokerURL := fs.String("broker", env("SVC_EDGE_BROKER_URL", "ssl://"+DefaultMQTTTLSListen),
		"URL of the MQTT broker the edge connects to: ssl:// (TLS), or tcp:// to a broker on the appliance itself (env SVC_EDGE_BROKER_URL)")
	brokerCA := fs.String("broker-ca", env("SVC_EDGE_BROKER_CA", ""),
		"PEM file of the CA that verifies an ssl:// broker, put in the configuration; empty: the embedded broker's CA under --data (made if missing); system: the appliance's own roots (env SVC_EDGE_BROKER_CA)")
	asJSON := fs.Bool("json", false, "print {\"id\", \"username\", \"password\", \"config\"}")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *org == "":
		return usageError{"edges create: --org is required"}
	case !cloud.Mode(*mode).Valid():
		return usageError{fmt.Sprintf("edges create: --mode %q: want live or test", *mode)}
	case !ids.Valid(ids.Site, *site):
		return usageError{fmt.Sprintf("edges create: --site %q: want a site ID (site_...)", *site)}
	}
	u, err := url.Parse(*brokerURL)
	if err != nil || u.Host == "" || !slices.Contains([]string{"tcp", "ssl", "ws", "wss"}, u.Scheme) || u.User != nil {
		return usageError{fmt.Sprintf("edges create: --broker %q: want tcp://, ssl://, ws:// or wss:// and a host, without credentials", *brokerURL)}
	}
	tlsURL := u.Scheme == "ssl" || u.Scheme == "wss"
	switch {
	case !tlsURL && !protocol.Loopback(u.Hostname()):
		return usageError{fmt.Sprintf("edges create: --broker %q: plain MQTT sends the password in clear, so only to a broker on the appliance itself; use ssl://", *brokerURL)}
	case !tlsURL && *brokerCA != "":
		return usageError{"edges create: --broker-ca is for an ssl:// or wss:// broker"}
	case (u.Scheme == "tcp" || u.Scheme == "ssl") && u.Port() == "":
		return usageError{fmt.Sprintf("edges create: --broker %q: give the port (1883 for tcp, 8883 for ssl)", *brokerURL)}
	}
	eb := edgeBroker{URL: *brokerURL}
	t := cloud.Tenant{OrgID: *org, Mode: cloud.Mode(*mode)}
	var file []byte
	var e cloud.Edge
	var secret string
	switch {
	case !tlsURL || *brokerCA == "system":
	case *brokerCA != "":
		if eb.CA, err = readCA(*brokerCA); err != nil {
			return fmt.Errorf("edges create: --broker-ca: %w", err)
		}
	default:
		certs, err := broker.EnsureCerts(cfg.tlsDir(), nil, time.Now())
		if err != nil {
			return fmt.Errorf("edges create: the embedded broker's CA: %w (or give --broker-ca)", err)
		}
		eb.CA = certs.CA
	}
	err = withService(ctx, &cfg, func(svc *cloud.Service) error {
		if _, err := svc.Store().Site(ctx, t, *site); errors.Is(err, cloud.ErrNotFound) {
			return fmt.Errorf("edges create: organisation %s has no %s-mode site %s", *org, *mode, *site)
		} else if err != nil {
			return err
		}
		gates, err := svc.SiteGates(ctx, t, *site)
		if err != nil {
			return err
		}
		if len(gates) == 0 {
			return fmt.Errorf("edges create: site %s has no gates; an appliance serves at least one, so create them first", *site)
		}
		e, secret, err = svc.CreateEdge(ctx, t, *site, *name)
		if errors.Is(err, cloud.ErrSiteHasEdge) {
			active, lerr := activeEdges(ctx, svc, t, *site)
			if lerr != nil {
				return lerr
			}
			return fmt.Errorf("edges create: site %s already has edge %s: a site has one appliance, so that a single-use pass "+
				"works once at the site; to replace it, revoke it first (svc-cloud edges revoke --org %s --mode %s --edge-id %s)",
				*site, strings.Join(active, ", "), *org, *mode, active[0])
		}
		if err != nil {
			return err
		}
		if file, err = edgeConfig(e, secret, eb, gates); err != nil {
			return fmt.Errorf("edges create: edge %s was made, but its configuration is not one the appliance accepts (%w); "+
				"revoke it (svc-cloud edges revoke --org %s --mode %s --edge-id %s) and try again", e.ID, err, *org, *mode, e.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(struct {
			ID       string          `json:"id"`
			Username string          `json:"username"`
			Password string          `json:"password"`
			Config   json.RawMessage `json:"config"`
		}{e.ID, e.Username, secret, file})
	}
	fmt.Fprintf(stdout, "edge %s (%s) at site %s, %s mode\nbroker username: %s\nbroker password: %s (shown once)\n"+
		"configuration for the appliance (/etc/svc-edge/config.json; relay pins are simulated until set to GPIO lines):\n%s",
		e.ID, e.Name, e.SiteID, e.Tenant.Mode, e.Username, secret, file)
	return nil
}

// edgeRow is one edge as `edges list --json` prints it.
type edgeRow struct {
	ID         string     `json:"id"`
	SiteID     string     `json:"site_id"`
	Name       string     `json:"name"`
	State      string     `json:"state"`
	StateSince *time.Time `json:"state_since"`
	LastSeenAt *time.Time `json:"last_seen_at"`
	Seq        uint64     `json:"seq"`
	Outbox     int        `json:"outbox"`
	Software   string     `json:"software"`
	CreatedAt  time.Time  `json:"created_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// activeEdges returns the IDs of the site's edges that are not revoked.
func activeEdges(ctx context.Context, svc *cloud.Service, t cloud.Tenant, siteID string) ([]string, error) {
	edges, err := svc.Edges(ctx, t, siteID)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range edges {
		if e.RevokedAt == nil {
			out = append(out, e.ID)
		}
	}
	return out, nil
}

// edgesRevoke revokes an edge: the appliance can no longer connect, sync
// or send facts, and its site may have a new one.
func edgesRevoke(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("edges revoke", flag.ContinueOnError)
	cfg.storeFlags(fs)
	cfg.brokerFlags(fs)
	org := fs.String("org", "", "organisation ID")
	mode := fs.String("mode", "", "live or test")
	id := fs.String("edge-id", "", "ID of the edge to revoke")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *org == "":
		return usageError{"edges revoke: --org is required"}
	case !cloud.Mode(*mode).Valid():
		return usageError{fmt.Sprintf("edges revoke: --mode %q: want live or test", *mode)}
	case !ids.Valid(ids.Edge, *id):
		return usageError{fmt.Sprintf("edges revoke: --edge-id %q: want an edge ID (edge_...)", *id)}
	}
	var e cloud.Edge
	var done cloud.BrokerReconciled // at Mosquitto
	var brokerErr error
	err := withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		if e, err = svc.RevokeEdge(ctx, cloud.Tenant{OrgID: *org, Mode: cloud.Mode(*mode)}, *id); err != nil {
			return err
		}
		// The revocation is committed whatever Mosquitto says: serve's
		// reconcile loop disables the account if this cannot.
		done, brokerErr = svc.ReconcileBrokerAccounts(ctx, 0)
		return nil
	})
	if errors.Is(err, cloud.ErrNotFound) {
		return fmt.Errorf("edges revoke: organisation %s has no %s-mode edge %s", *org, *mode, *id)
	}
	if err != nil {
		return err
	}
	at := e.RevokedAt.UTC().Format(time.RFC3339)
	switch {
	case cfg.MQTTDynsecUsername == "":
		fmt.Fprintf(stdout, "revoked %s (%s) at %s: the embedded broker disconnects it within seconds and the cloud refuses "+
			"its facts and resyncs; on a Mosquitto with password and ACL files, also remove it from them (docs/decisions.md)\n",
			e.ID, e.Name, at)
	case brokerErr != nil:
		fmt.Fprintf(stdout, "revoked %s (%s) at %s: the cloud refuses its facts and resyncs; its account at Mosquitto could not be "+
			"disabled now (%v): svc-cloud serve disables it once Mosquitto answers\n", e.ID, e.Name, at, brokerErr)
	case slices.Contains(done.Disabled, e.ID):
		fmt.Fprintf(stdout, "revoked %s (%s) at %s: Mosquitto disabled its account and disconnected it, and the cloud refuses "+
			"its facts and resyncs\n", e.ID, e.Name, at)
	default:
		fmt.Fprintf(stdout, "revoked %s (%s) at %s: Mosquitto holds no enabled account for it, and the cloud refuses "+
			"its facts and resyncs\n", e.ID, e.Name, at)
	}
	return nil
}

// edgesList prints the organisation's edges and what the cloud knows of
// each: its state (offline once silent for cloud.EdgeSilentAfter), its last
// contact, and the feed sequence and outbox depth it last reported.
func edgesList(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("edges list", flag.ContinueOnError)
	cfg.storeFlags(fs)
	org := fs.String("org", "", "organisation ID")
	mode := fs.String("mode", "", "live or test")
	site := fs.String("site", "", "only the edges of this site")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *org == "":
		return usageError{"edges list: --org is required"}
	case !cloud.Mode(*mode).Valid():
		return usageError{fmt.Sprintf("edges list: --mode %q: want live or test", *mode)}
	case *site != "" && !ids.Valid(ids.Site, *site):
		return usageError{fmt.Sprintf("edges list: --site %q: want a site ID (site_...)", *site)}
	}
	var edges []cloud.Edge
	err := withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		edges, err = svc.Edges(ctx, cloud.Tenant{OrgID: *org, Mode: cloud.Mode(*mode)}, *site)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		rows := make([]edgeRow, 0, len(edges))
		for _, e := range edges {
			rows = append(rows, edgeRow{e.ID, e.SiteID, e.Name, e.State, e.StateSince, e.LastSeenAt, e.Seq, e.Outbox, e.Software, e.CreatedAt,
				e.RevokedAt})
		}
		return json.NewEncoder(stdout).Encode(rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EDGE\tSITE\tNAME\tSTATE\tLAST SEEN\tSEQ\tOUTBOX")
	active := map[string]int{} // site → edges not revoked
	for _, e := range edges {
		seen := "never"
		if e.LastSeenAt != nil {
			seen = e.LastSeenAt.UTC().Format(time.RFC3339)
		}
		state := e.State
		if e.RevokedAt != nil {
			state = "revoked"
		} else {
			active[e.SiteID]++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", e.ID, e.SiteID, e.Name, state, seen, e.Seq, e.Outbox)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, site := range slices.Sorted(maps.Keys(active)) {
		if active[site] > 1 { // made before one appliance per site was the rule
			fmt.Fprintf(stdout, "warning: site %s has %d edges that are not revoked: a single-use pass may be used once at each; "+
				"revoke all but one (docs/decisions.md, \"One appliance per site\")\n", site, active[site])
		}
	}
	return nil
}
