package config

import (
	"encoding/json"
	"fmt"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/sync/protocol"
)

// Where a first configuration numbers its gates' parts: a TCP reader per
// gate on loopback port 9001 and up, a simulated relay pin per gate from
// SIM17 (an installer sets GPIO lines; svc-edge run --simulate drives
// simulated ones).
const (
	FirstReaderPort = 9001
	FirstRelayPin   = 17
)

// Initial is what an appliance's first configuration holds (issue 17):
// what its enrolment delivered, and what only the appliance knows.
type Initial struct {
	Site     protocol.Site
	EdgeID   string
	Broker   Broker   // URL, Username, Password and CA as delivered
	GateIDs  []string // the site's gates, oldest first
	DataDir  string   // absolute: where the appliance keeps its state
	Listen   string   // the local HTTP API; "" for DefaultListen
	Kiosk    string   // the reception kiosk's listen address; "" for none
	Language string   // the kiosk's second language beside English; "" for none
	// ReaderPort is the first gate's reader's loopback port, the next
	// gate's the next one; 0 for FirstReaderPort.
	ReaderPort int
}

// Document returns the configuration file for in, in the file's format,
// after checking that Parse accepts it: each gate with a loopback TCP
// reader and a simulated relay, failing secure when its cache is stale.
// These gates are what a fresh appliance runs, offline included, until
// the cloud sends its hardware document on the feed (PATCH
// /v1/edges/{edge_id}), which then wins over them (docs/decisions.md,
// "Hardware from the cloud (issue 17)"). Its error is Parse's *Error.
func (in Initial) Document() ([]byte, error) {
	f := fileConfig{
		Site:    fileSite{Mode: in.Site.Mode, OrgID: in.Site.OrgID, SiteID: in.Site.SiteID},
		EdgeID:  in.EdgeID,
		Broker:  fileBroker{URL: in.Broker.URL, Username: in.Broker.Username, Password: in.Broker.Password, CA: string(in.Broker.CA)},
		DataDir: in.DataDir, Listen: in.Listen,
		Gates: make([]hardware.Gate, 0, len(in.GateIDs)),
	}
	if f.Listen == "" {
		f.Listen = DefaultListen
	}
	port := in.ReaderPort
	if port == 0 {
		port = FirstReaderPort
	}
	for i, id := range in.GateIDs {
		f.Gates = append(f.Gates, hardware.Gate{ID: id,
			Readers:   []hardware.Reader{{Kind: TCP, Listen: fmt.Sprintf("127.0.0.1:%d", port+i)}},
			Relay:     hardware.Relay{Pin: fmt.Sprintf("SIM%d", FirstRelayPin+i), Pulse: hardware.DefaultPulse},
			WhenStale: FailSecure})
	}
	if in.Kiosk != "" {
		f.Kiosk = &fileKiosk{Listen: in.Kiosk, Languages: []string{"en"}, Label: "62x100"}
		if in.Language != "" {
			f.Kiosk.Languages = append(f.Kiosk.Languages, in.Language)
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if _, err := Parse(b, Options{}); err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
