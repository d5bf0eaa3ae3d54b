// Package enrol is the appliance's side of enrolment by a one-time code
// (docs/decisions.md, "Enrolment (issue 17)"): its Ed25519 identity key,
// kept on the data partition as edge/keyfile keeps keys; the signed
// requests (shared/edgeauth) that ask the cloud for a code and poll until
// an installer claims it; and the first configuration file, written once
// the claim delivered what the appliance needs before its first
// connection.
//
// It may import the standard library, edge/config, edge/durable,
// edge/keyfile, shared/ and sync/protocol.
package enrol

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/durable"
	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/shared/keyfile"
	"github.com/svc-vms/svc/sync/protocol"
)

// KeyFileName is the identity key's file, in the data directory.
const KeyFileName = "identity-key.pem"

// KeyError is returned by Identity when the key file is there and cannot
// be used. The appliance never makes a new key over it: the cloud knows
// the appliance by it.
type KeyError struct {
	Path string
	Err  error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("identity key %s: %v. The appliance does not replace this file, since the cloud knows the appliance by it: "+
		"fix its owner or mode (0600) if that is the problem, or restore it from a backup; failing that, move it aside, revoke "+
		"this edge in the cloud (POST /v1/edges/{edge_id}/revoke) and enrol the appliance again, which makes a new key",
		e.Path, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// Identity returns the appliance's identity key, kept in dataDir (made,
// with the directory, on the first call: created is true then). A key
// file that cannot be used is a *KeyError.
func Identity(dataDir string) (priv ed25519.PrivateKey, created bool, err error) {
	path := filepath.Join(dataDir, KeyFileName)
	if err := mkdirAll(dataDir); err != nil {
		return nil, false, fmt.Errorf("identity key: %w", err)
	}
	priv, created, err = keyfile.Open(path, nil)
	var fe *keyfile.FileError
	if errors.As(err, &fe) {
		return nil, false, &KeyError{Path: path, Err: fe.Err}
	}
	return priv, created, err
}

// States of an enrolment (the API's enrolment.state).
const (
	StateWaiting  = "waiting"
	StateExpired  = "expired"
	StateClaimed  = "claimed"
	StateEnrolled = "enrolled"
	StateRevoked  = "revoked"
)

// Status is where an enrolment stands, for the appliance's status page.
type Status struct {
	State     string    `json:"state"`                // a State*, or "starting" before the first answer
	Code      string    `json:"code,omitempty"`       // XXXX-XXXX, while waiting
	ExpiresAt time.Time `json:"expires_at,omitzero"`  // the code's end
	Cloud     string    `json:"cloud"`                // the cloud's URL
	Skew      float64   `json:"clock_skew_seconds"`   // the appliance's clock minus the cloud's
	SkewWarn  bool      `json:"clock_skew_warning"`   // over the cloud's tolerance
	Error     string    `json:"last_error,omitempty"` // the last failure, retried
}

// Gate is one of the site's gates, as enrolment delivers it.
type Gate struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Direction string `json:"direction"`
}

// Result is what a claimed enrolment delivers.
type Result struct {
	EdgeID   string
	Name     string
	Site     protocol.Site
	SiteName string
	TimeZone string
	Broker   config.Broker // URL, Username, Password, CA
	Gates    []Gate
}

// Client enrols the appliance with the cloud at Cloud.
type Client struct {
	// Cloud is the cloud's base URL (https://cloud.example.com, or
	// http:// to a cloud on a trusted network, as in make run).
	Cloud string
	// HTTP makes the requests; nil means http.DefaultClient.
	HTTP *http.Client
	// Key is the identity key that signs every request.
	Key ed25519.PrivateKey
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll overrides the interval the cloud asks for (tests).
	Poll time.Duration
	// Show is told each new code, to show it (console, status page).
	Show func(Status)

	mu     sync.Mutex
	status Status
}

// Status returns where the enrolment stands.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

func (c *Client) set(fn func(*Status)) Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(&c.status)
	c.status.Cloud = c.Cloud
	return c.status
}

// answer is the API's enrolment object.
type answer struct {
	State         string  `json:"state"`
	Code          *string `json:"code"`
	ExpiresAt     *string `json:"expires_at"`
	PollAfter     int     `json:"poll_interval_seconds"`
	Skew          float64 `json:"clock_skew_seconds"`
	SkewWarning   bool    `json:"clock_skew_warning"`
	Configuration *struct {
		EdgeID string `json:"edge_id"`
		Name   string `json:"name"`
		Site   struct {
			Mode     string `json:"mode"`
			OrgID    string `json:"org_id"`
			SiteID   string `json:"site_id"`
			Name     string `json:"name"`
			TimeZone string `json:"time_zone"`
		} `json:"site"`
		Broker struct {
			URL      string  `json:"url"`
			Username string  `json:"username"`
			Password string  `json:"password"`
			CA       *string `json:"ca"`
		} `json:"broker"`
		Gates []Gate `json:"gates"`
	} `json:"configuration"`
}

// ProblemError is an answer of the cloud that is a problem: it is told
// to whoever runs the appliance as the cloud wrote it.
type ProblemError struct {
	Status int
	Code   string
	Detail string
}

func (e *ProblemError) Error() string {
	return fmt.Sprintf("the cloud answered %d %s: %s", e.Status, e.Code, e.Detail)
}

// maxAnswer bounds an answer read.
const maxAnswer = 256 << 10

// do sends a signed request and decodes its answer.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (answer, error) {
	u, err := url.JoinPath(c.Cloud, path)
	if err != nil {
		return answer{}, fmt.Errorf("cloud URL %q: %w", c.Cloud, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return answer{}, err
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	edgeauth.Sign(req, body, c.Key, now())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return answer{}, fmt.Errorf("read the cloud's answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var p struct {
			Code   string `json:"code"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(raw, &p)
		if p.Code == "" {
			p.Detail = strings.TrimSpace(string(raw))
		}
		return answer{}, &ProblemError{Status: resp.StatusCode, Code: p.Code, Detail: p.Detail}
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return answer{}, fmt.Errorf("the cloud's answer is not an enrolment: %w", err)
	}
	return a, nil
}

// Run asks for a code, shows it, and polls until an installer claims it,
// asking for a new code whenever one expires (or the appliance's edge was
// revoked). It returns what the claim delivered, ctx's error, or an error
// it cannot get past by waiting: an appliance enrolled already (its
// configuration lost: revoke its edge in the cloud and enrol again).
// Failures to reach the cloud, and its refusals, are retried after the
// poll interval, and shown in Status.
func (c *Client) Run(ctx context.Context) (Result, error) {
	c.set(func(s *Status) { s.State = "starting" })
	need := true // a new code is needed
	for {
		interval := 5 * time.Second
		var a answer
		var err error
		if need {
			a, err = c.do(ctx, http.MethodPost, "/v1/enrolments", nil)
		} else {
			a, err = c.do(ctx, http.MethodGet, "/v1/enrolments/self", nil)
		}
		var pe *ProblemError
		switch {
		case ctx.Err() != nil:
			return Result{}, ctx.Err()
		case errors.As(err, &pe) && pe.Code == "invalid_state" && need:
			return Result{}, fmt.Errorf("enrol: %w (its configuration file is gone: revoke its edge, then enrol again)", err)
		case errors.As(err, &pe) && pe.Code == "not_found":
			need = true
		case err != nil:
			c.set(func(s *Status) { s.Error = err.Error() })
		default:
			if a.PollAfter > 0 {
				interval = time.Duration(a.PollAfter) * time.Second
			}
			st := c.set(func(s *Status) {
				s.Error, s.State, s.Skew, s.SkewWarn = "", a.State, a.Skew, a.SkewWarning
				if a.Code != nil {
					s.Code = *a.Code
				}
				if a.ExpiresAt != nil {
					s.ExpiresAt, _ = time.Parse(time.RFC3339, *a.ExpiresAt)
				}
				if a.State != StateWaiting {
					s.Code, s.ExpiresAt = "", time.Time{}
				}
			})
			switch a.State {
			case StateWaiting:
				need = false
				if a.Code != nil && c.Show != nil {
					c.Show(st)
				}
			case StateExpired, StateRevoked:
				need = true
				continue // at once: the appliance shows no code meanwhile
			case StateEnrolled:
				return Result{}, errors.New("enrol: the cloud has this appliance enrolled and connected already, and delivers its configuration once; " +
					"its configuration file is gone: revoke its edge (POST /v1/edges/{edge_id}/revoke), then enrol again")
			case StateClaimed:
				need = false
				if a.Configuration != nil {
					return result(a), nil
				}
			}
		}
		if c.Poll > 0 {
			interval = c.Poll
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		case <-t.C:
		}
	}
}

func result(a answer) Result {
	conf := a.Configuration
	r := Result{EdgeID: conf.EdgeID, Name: conf.Name, SiteName: conf.Site.Name, TimeZone: conf.Site.TimeZone,
		Site:   protocol.Site{Mode: conf.Site.Mode, OrgID: conf.Site.OrgID, SiteID: conf.Site.SiteID},
		Broker: config.Broker{URL: conf.Broker.URL, Username: conf.Broker.Username, Password: conf.Broker.Password},
		Gates:  conf.Gates}
	if conf.Broker.CA != nil {
		r.Broker.CA = []byte(*conf.Broker.CA)
	}
	return r
}

// Local is what only the appliance decides of its first configuration.
type Local struct {
	DataDir  string // where it keeps its state
	Listen   string // the local HTTP API; "" for the default
	Kiosk    string // the reception kiosk's address; "" for none
	Language string // the kiosk's second language; "" for none
	// ReaderPort is the first gate's reader's loopback port; 0 for
	// config.FirstReaderPort.
	ReaderPort int
}

// WriteConfig writes the first configuration file at path from r and
// local: mode 0600 (it holds the broker password), whole or not at all.
// It never replaces a file: a path that exists is an error wrapping
// fs.ErrExist. A site without gates is an error: the appliance serves at
// least one.
func WriteConfig(path string, r Result, local Local) error {
	if len(r.Gates) == 0 {
		return fmt.Errorf("write config: site %s has no gates; create its gates in the cloud (POST /v1/gates), revoke this edge and enrol again", r.Site.SiteID)
	}
	dataDir, err := filepath.Abs(local.DataDir)
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	in := config.Initial{Site: r.Site, EdgeID: r.EdgeID, Broker: r.Broker, DataDir: dataDir, Listen: local.Listen,
		Kiosk: local.Kiosk, Language: local.Language, ReaderPort: local.ReaderPort}
	for _, g := range r.Gates {
		in.GateIDs = append(in.GateIDs, g.ID)
	}
	doc, err := in.Document()
	if err != nil {
		return fmt.Errorf("write config: the delivered configuration is not one the appliance accepts: %w", err)
	}
	if err := mkdirAll(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := durable.CreateNew(path, doc, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write config: %s exists: %w", path, err)
		}
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// mkdirAll makes dir, private to the appliance's user, if it is missing.
func mkdirAll(dir string) error {
	return os.MkdirAll(dir, 0o700)
}
