package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// edgesClaim is `svc-cloud edges claim`: the installer's command line for
// POST /v1/edges. It calls the API with a secret key, as an installer
// would, rather than the database: it needs no more than the console.
func edgesClaim(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	fs := flag.NewFlagSet("edges claim", flag.ContinueOnError)
	api := fs.String("api", env("SVC_API_URL", "http://"+DefaultAddr), "the API's base URL (env SVC_API_URL)")
	key := fs.String("key", env("SVC_API_KEY", ""), "a secret key with sites:write (env SVC_API_KEY); empty: the demo's test-mode key from --data")
	data := fs.String("data", env("SVC_DATA_DIR", "./data"), "the data directory of svc-cloud serve --demo, for its demo.json when --key is empty")
	site := fs.String("site", "", "ID of the site the appliance serves; empty: the organisation's oldest site in the key's mode")
	name := fs.String("name", "", "name of the edge (default Edge)")
	appliance := fs.String("appliance", "", "read the code from the appliance's status page (http://APPLIANCE:8081), waiting until it shows one")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the API and, with --appliance, for the code")
	asJSON := fs.Bool("json", false, "print the edge as the API answers it")
	fs.SetOutput(stderr)
	// The code comes first or after the flags: parse what follows it too.
	var code string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		code, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if code == "" && fs.NArg() == 1 {
		code = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("edges claim: unexpected argument %q", fs.Arg(0))}
	}
	if (code == "") == (*appliance == "") {
		return usageError{"edges claim: give the appliance's code, or --appliance URL to read it from its status page"}
	}
	deadline := time.Now().Add(*wait)
	if *key == "" {
		// The demo's keys, which serve --demo writes once it has seeded:
		// make run starts both at once, so they may be on their way.
		path := filepath.Join(*data, "demo.json")
		raw, err := os.ReadFile(path)
		for errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return err
			}
			raw, err = os.ReadFile(path)
		}
		if err != nil {
			return usageError{fmt.Sprintf("edges claim: --key is required (the demo's keys are not in %s: %v)", *data, err)}
		}
		var keys cloud.SeedKeys
		if err := json.Unmarshal(raw, &keys); err != nil {
			return fmt.Errorf("edges claim: %s: %w", path, err)
		}
		*key = keys.SecretTest
	}
	c := apiClient{base: strings.TrimSuffix(strings.TrimSuffix(*api, "/"), "/v1"), key: *key}
	if *appliance != "" {
		var err error
		if code, err = applianceCode(ctx, *appliance, deadline); err != nil {
			return err
		}
	}
	if *site == "" {
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := c.retry(ctx, deadline, http.MethodGet, "/v1/sites?limit=100", nil, &page); err != nil {
			return fmt.Errorf("edges claim: list sites: %w", err)
		}
		if len(page.Data) == 0 {
			return errors.New("edges claim: the organisation has no site in this mode; give --site")
		}
		*site = page.Data[len(page.Data)-1].ID // newest first: the last is the oldest
	}
	body := map[string]string{"code": code, "site_id": *site}
	if *name != "" {
		body["name"] = *name
	}
	var edge map[string]any
	if err := c.retry(ctx, deadline, http.MethodPost, "/v1/edges", body, &edge); err != nil {
		return fmt.Errorf("edges claim: %w", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(edge)
	}
	fmt.Fprintf(stdout, "claimed %s: edge %s (%s) at site %s; the appliance collects its configuration at its next poll\n",
		code, edge["id"], edge["name"], edge["site_id"])
	return nil
}

// apiClient calls the API with a key.
type apiClient struct {
	base, key string
}

// apiError is an API problem.
type apiError struct {
	status int
	code   string
	detail string
	errors []struct{ Location, Message string }
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s: %s", e.status, e.code, e.detail)
	for _, f := range e.errors {
		s += fmt.Sprintf(" %s %s.", f.Location, f.Message)
	}
	return s
}

// retry calls the API until it answers, or deadline: a cloud still
// starting (make run starts both at once) refuses connections for a
// moment. An answer that is a problem is returned at once.
func (c apiClient) retry(ctx context.Context, deadline time.Time, method, path string, body, out any) error {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body) // strings only
	}
	var b [16]byte // a random (version 4) UUID, the Idempotency-Key the API takes
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	idem := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	for {
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(raw))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", idem) // the same on every retry
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if rerr != nil {
				return rerr
			}
			if resp.StatusCode >= 300 {
				var p struct {
					Code, Detail string
					Errors       []struct{ Location, Message string }
				}
				_ = json.Unmarshal(b, &p)
				return &apiError{status: resp.StatusCode, code: p.Code, detail: p.Detail, errors: p.Errors}
			}
			return json.Unmarshal(b, out)
		}
		if time.Now().After(deadline) {
			return err
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// applianceCode reads the enrolment code an appliance's status page shows
// (svc-edge enrol's GET /status), waiting until it shows one.
func applianceCode(ctx context.Context, base string, deadline time.Time) (string, error) {
	url := strings.TrimSuffix(base, "/") + "/status"
	for {
		var st struct {
			Enrolment struct {
				State string `json:"state"`
				Code  string `json:"code"`
				Error string `json:"last_error"`
			} `json:"enrolment"`
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", fmt.Errorf("edges claim: --appliance: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		last := ""
		if err == nil {
			err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Enrolment.Code != "" {
				return st.Enrolment.Code, nil
			}
			last = st.Enrolment.State + " " + st.Enrolment.Error
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("edges claim: the appliance at %s showed no code (%v %s)", base, err, last)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return "", err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
