package config

import (
	"encoding/json"

	"github.com/svc-vms/svc/shared/hardware"
)

// Redacted stands for a secret in a Config's JSON.
const Redacted = "***"

// The JSON shape of a Config, the file's own, for printing a resolved
// configuration. It is never decoded: Parse walks the document itself.
type (
	fileConfig struct {
		Site      fileSite   `json:"site"`
		EdgeID    string     `json:"edge_id"`
		Broker    fileBroker `json:"broker"`
		DataDir   string     `json:"data_dir,omitempty"`
		CachePath string     `json:"cache_path,omitempty"`
		Listen    string     `json:"listen"`
		Gates     []fileGate `json:"gates"`
		Kiosk     *fileKiosk `json:"kiosk,omitempty"`
	}
	fileKiosk struct {
		Comment   string   `json:"//,omitempty"`
		Listen    string   `json:"listen"`
		Languages []string `json:"languages"`
		Label     string   `json:"label"`
		Printer   string   `json:"printer,omitempty"`
	}
	fileSite struct {
		Mode   string `json:"mode"`
		OrgID  string `json:"org_id"`
		SiteID string `json:"site_id"`
	}
	fileBroker struct {
		URL          string `json:"url"`
		Username     string `json:"username"`
		Password     string `json:"password,omitempty"`
		PasswordFile string `json:"password_file,omitempty"`
		CA           string `json:"ca,omitempty"`
		CAFile       string `json:"ca_file,omitempty"`
	}
	// fileGate is a gate as the file holds it (hardware.Gate), with a
	// comment beside each reader: the file's decoder takes a "//" key in
	// any object.
	fileGate struct {
		hardware.Gate
		Readers []fileReader `json:"readers"`
	}
	fileReader struct {
		Comment string `json:"//,omitempty"`
		hardware.Reader
	}
)

// MarshalJSON writes c in the file's format with the broker password
// replaced by Redacted, so that a Config printed or logged never shows it.
func (c Config) MarshalJSON() ([]byte, error) {
	f := fileConfig{
		Site:    fileSite{Mode: c.Site.Mode, OrgID: c.Site.OrgID, SiteID: c.Site.SiteID},
		EdgeID:  c.EdgeID,
		Broker:  fileBroker{URL: c.Broker.URL, Username: c.Broker.Username, PasswordFile: c.Broker.PasswordFile, CAFile: c.Broker.CAFile},
		DataDir: c.DataDir, CachePath: c.CachePath, Listen: c.Listen,
		Gates: make([]fileGate, 0, len(c.Gates)),
	}
	if c.Broker.Password != "" {
		f.Broker.Password = Redacted
	}
	if c.Broker.CAFile == "" {
		f.Broker.CA = string(c.Broker.CA)
	}
	for _, g := range c.Gates {
		fg := fileGate{Gate: g, Readers: make([]fileReader, 0, len(g.Readers))}
		for _, r := range g.Readers {
			fg.Readers = append(fg.Readers, fileReader{Reader: r})
		}
		f.Gates = append(f.Gates, fg)
	}
	if k := c.Kiosk; k != nil {
		f.Kiosk = &fileKiosk{Listen: k.Listen, Languages: k.Languages, Label: k.Label, Printer: k.Printer}
	}
	return json.Marshal(f)
}
