package edge

import (
	"encoding/json"
	"time"
)

// The bodies of the local HTTP API, shared with svc-edge's status and
// scan commands. They are the API's own types (STYLE D3): gate.Result and
// the cache's counts can change without changing what a client reads.

// ScanResponse is the body of POST /gates/{gate_id}/scan.
type ScanResponse struct {
	GateID   string `json:"gate_id"`
	Admitted bool   `json:"admitted"`
	// Kind is the fact recorded: check_in, check_out, re_entry, entered,
	// punch, passage or refused; empty when the scan was abandoned before a
	// decision. Refused with reason record_failed when the admit could
	// not be recorded: the gate did not open (the response is then 500).
	Kind        string `json:"kind,omitempty"`
	Reason      string `json:"reason,omitempty"`
	VisitID     string `json:"visit_id,omitempty"`
	PassVisitID string `json:"pass_visit_id,omitempty"`
	// PersonID is a personal pass's holder; Direction a punch's, in or out.
	PersonID  string `json:"person_id,omitempty"`
	Direction string `json:"direction,omitempty"`
	// Repeat is true for a personal pass scanned again at the gate of its
	// last punch within gate.PunchRepeat: the gate opened and recorded a
	// passage (kind passage), not a new punch.
	Repeat bool   `json:"repeat,omitempty"`
	FactID string `json:"fact_id,omitempty"`
	// DecisionMicros is how long the decision took, in microseconds.
	DecisionMicros int64 `json:"decision_us"`
	// Error is a relay or store failure; the response is then 500.
	Error string `json:"error,omitempty"`
}

// StatusResponse is the body of GET /status.
type StatusResponse struct {
	EdgeID string     `json:"edge_id"`
	Site   SiteStatus `json:"site"`
	Now    time.Time  `json:"now"`
	// Seq is the last change of the cloud's feed applied.
	Seq uint64 `json:"seq"`
	// LastSync is the last contact with the cloud; null if none.
	LastSync *time.Time `json:"last_sync"`
	// SyncAgeSeconds is how long ago LastSync was; null if never.
	SyncAgeSeconds *float64 `json:"sync_age_seconds"`
	// Stale is true when gates that fail secure refuse every scan;
	// StaleReason says why.
	Stale       bool         `json:"stale"`
	StaleReason string       `json:"stale_reason,omitempty"`
	Outbox      OutboxStatus `json:"outbox"`
	Cache       CacheStatus  `json:"cache"`
	// Hardware says whose hardware the gates below are (the cloud's or
	// the configuration file's), and why the cloud's is not driven.
	Hardware HardwareStatus `json:"hardware"`
	Gates    []GateStatus   `json:"gates"`
	// Broker is the MQTT edge half's state as it reports it; absent
	// without one.
	Broker json.RawMessage `json:"broker,omitempty"`
	// Update is the state of software updates; absent when main wires
	// none (Deps.Update).
	Update *UpdateStatus `json:"update,omitempty"`
}

// SiteStatus names the site the edge serves.
type SiteStatus struct {
	Mode   string `json:"mode"`
	OrgID  string `json:"org_id"`
	SiteID string `json:"site_id"`
}

// OutboxStatus is the facts not yet acknowledged by the cloud.
type OutboxStatus struct {
	Depth int `json:"depth"`
	// Oldest is when the oldest waiting fact happened; null when none wait.
	Oldest *time.Time `json:"oldest"`
}

// CacheStatus counts what the cache holds.
type CacheStatus struct {
	Visits int `json:"visits"`
	Gates  int `json:"gates"`
	Keys   int `json:"keys"`
	People int `json:"people"`
}

// GateStatus is one gate driven now.
type GateStatus struct {
	GateID string `json:"gate_id"`
	// Name and Direction are the cloud's; Direction is "unknown" (and the
	// gate works as an entry) until the cloud has sent the gate.
	Name      string   `json:"name,omitempty"`
	Direction string   `json:"direction"`
	WhenStale string   `json:"when_stale"`
	Readers   []string `json:"readers"`
	// DoorOpen is the door sensor's last reading; null without a sensor.
	DoorOpen *bool `json:"door_open"`
}

// HealthResponse is the body of GET /healthz.
type HealthResponse struct {
	Status string `json:"status"` // ok or unavailable
	Reason string `json:"reason,omitempty"`
}

// ErrorResponse is the body of a refused request to the local API.
type ErrorResponse struct {
	Error string `json:"error"`
}

// UpdateStatus is the state of software updates, in StatusResponse.
type UpdateStatus struct {
	// Version is the running release ("dev" for a build without one).
	Version string `json:"version"`
	// Slot is the slot it runs from ("a" or "b"); "" without a supervisor.
	Slot string `json:"slot,omitempty"`
	// Enabled is false when the appliance cannot update, with Disabled
	// saying why (no supervisor, no release key built in, no cloud).
	Enabled  bool   `json:"enabled"`
	Disabled string `json:"disabled,omitempty"`
	// State is idle, downloading, verifying or trial_requested.
	State string `json:"state"`
	// Target, Bytes and Size describe a download under way.
	Target string `json:"target,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Error is the last attempt's, to be tried again.
	Error string `json:"error,omitempty"`
	// Last is the last update's outcome.
	Last *UpdateResult `json:"last,omitempty"`
}

// UpdateResult is an update's outcome.
type UpdateResult struct {
	Version string    `json:"version"`
	From    string    `json:"from,omitempty"`
	Outcome string    `json:"outcome"` // committed, rolled_back or rejected
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}
