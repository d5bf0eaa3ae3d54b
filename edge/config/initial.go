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
	DataDir  string   // absolute: where the appliance keeps its state; "" for DefaultDataDir
	Listen   string   // the local HTTP API; "" for DefaultListen
	Kiosk    string   // the reception kiosk's listen address; "" for none
	Language string   // the kiosk's second language beside English; "" for none
	// ReaderPort is the first gate's reader's loopback port, the next
	// gate's the next one; 0 for FirstReaderPort.
	ReaderPort int
}

// Comments a first configuration carries for whoever edits it.
const (
	// readerComment, beside each reader: readers listen on loopback
	// unless the installer says otherwise, since anyone who can reach the
	// port can present a pass to the gate.
	readerComment = "Loopback only: a reader on this machine. To take passes from a reader on the LAN, " +
		"set listen to this appliance's LAN address (or 0.0.0.0) and port, and let only the reader reach it " +
		"(a firewall rule or a VLAN): whoever can connect can present a pass to this gate."
	// kioskComment says how the kiosk is reached and who may use it.
	kioskComment = "The reception kiosk: tablets on the site's LAN open http://THIS-APPLIANCE:PORT/ and pair " +
		"with a code from svc-edge kiosk pair; nothing but the pairing page answers an unpaired browser."
)

// Document returns the configuration file for in, in the file's format,
// after checking that Parse accepts it: each gate with a loopback TCP
// reader and a simulated relay, failing secure when its cache is stale,
// and comments saying how to open a reader or the kiosk to the LAN. It
// is what an appliance enrolled by code writes and what svc-cloud edges
// create prints. These gates are what a fresh appliance runs, offline
// included, until the cloud sends its hardware document on the feed
// (PATCH /v1/edges/{edge_id}), which then wins over them
// (docs/decisions.md, "Hardware from the cloud (issue 17)"). Its error is
// Parse's *Error.
func (in Initial) Document() ([]byte, error) {
	f := fileConfig{
		Site:    fileSite{Mode: in.Site.Mode, OrgID: in.Site.OrgID, SiteID: in.Site.SiteID},
		EdgeID:  in.EdgeID,
		Broker:  fileBroker{URL: in.Broker.URL, Username: in.Broker.Username, Password: in.Broker.Password, CA: string(in.Broker.CA)},
		DataDir: in.DataDir, Listen: in.Listen,
		Gates: make([]fileGate, 0, len(in.GateIDs)),
	}
	if f.Listen == "" {
		f.Listen = DefaultListen
	}
	port := in.ReaderPort
	if port == 0 {
		port = FirstReaderPort
	}
	for i, id := range in.GateIDs {
		f.Gates = append(f.Gates, fileGate{
			Gate: hardware.Gate{ID: id, WhenStale: FailSecure,
				Relay: hardware.Relay{Pin: fmt.Sprintf("SIM%d", FirstRelayPin+i), Pulse: hardware.DefaultPulse}},
			Readers: []fileReader{{Comment: readerComment, Reader: hardware.Reader{Kind: TCP, Listen: fmt.Sprintf("127.0.0.1:%d", port+i)}}},
		})
	}
	if in.Kiosk != "" {
		f.Kiosk = &fileKiosk{Comment: kioskComment, Listen: in.Kiosk, Languages: KioskLanguages(in.Language), Label: "62x100"}
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

// KioskLanguages are the languages of a first configuration's kiosk:
// English, then second unless it is "".
func KioskLanguages(second string) []string {
	if second == "" || second == "en" {
		return []string{"en"}
	}
	return []string{"en", second}
}
