package update

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/shared/release"
)

// PollPath is the cloud's endpoint the appliance polls (signed with its
// identity key, edgeauth): POST with a Poll, answered with a PollResponse.
const PollPath = "/v1/edge/update"

// PollResponse is the cloud's answer to a Poll.
type PollResponse struct {
	// Release is the signed manifest due now; nil when none is.
	Release *release.Envelope `json:"release"`
	// URL is where its bundle is, relative to the cloud's base URL.
	URL string `json:"url,omitempty"`
}

// HTTP is Source over the cloud's HTTPS API, every request signed with the
// appliance's identity key.
type HTTP struct {
	// Base is the cloud's URL ("https://cloud.example").
	Base string
	// Key is the appliance's identity key.
	Key    ed25519.PrivateKey
	Client *http.Client
	Now    func() time.Time
}

var _ Source = (*HTTP)(nil)

func (h *HTTP) do(ctx context.Context, method, u string, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	edgeauth.Sign(req, body, h.Key, now())
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	return c.Do(req)
}

// Check implements Source.
func (h *HTTP) Check(ctx context.Context, p Poll) (*Offer, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	resp, err := h.do(ctx, http.MethodPost, strings.TrimSuffix(h.Base, "/")+PollPath, body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var out PollResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the cloud's answer: %w", err)
	}
	if out.Release == nil {
		return nil, nil
	}
	return &Offer{Release: *out.Release, URL: out.URL}, nil
}

// Download implements Source with a Range request.
func (h *HTTP) Download(ctx context.Context, o Offer, offset int64) (io.ReadCloser, bool, error) {
	base, err := url.Parse(h.Base)
	if err != nil {
		return nil, false, err
	}
	ref, err := url.Parse(o.URL)
	if err != nil {
		return nil, false, fmt.Errorf("the bundle's URL: %w", err)
	}
	u := base.ResolveReference(ref)
	if u.Host != base.Host || u.Scheme != base.Scheme {
		// The identity key signs requests to the cloud only.
		return nil, false, fmt.Errorf("the bundle's URL %s is not on the cloud %s", u, h.Base)
	}
	header := http.Header{}
	if offset > 0 {
		header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
	}
	resp, err := h.do(ctx, http.MethodGet, u.String(), nil, header)
	if err != nil {
		return nil, false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.Body, false, nil
	case http.StatusPartialContent:
		return resp.Body, true, nil
	case http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		return nil, false, ErrBeyondEnd
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return nil, false, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(raw)))
}
