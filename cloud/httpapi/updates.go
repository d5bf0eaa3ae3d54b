package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/problem"
	"github.com/svc-vms/svc/shared/release"
)

// This file serves signed updates (docs/decisions.md, "Signed updates
// (issue 17)"): the two routes an appliance calls, signed with its identity
// key rather than an API key, and the rollouts an organisation schedules.

// downloadTime bounds one download of a bundle: the server's write timeout
// is lifted for it, as a 30 MB binary over a slow site link takes minutes;
// a download cut short resumes with a Range request.
const downloadTime = 30 * time.Minute

// edgePollBody is what an appliance sends (edge/update.Poll, on the wire).
type edgePollBody struct {
	Version  string `json:"version"`
	Arch     string `json:"arch"`
	ARM      string `json:"arm"`
	Slot     string `json:"slot"`
	Progress *struct {
		State   string `json:"state"`
		Version string `json:"version"`
		Bytes   int64  `json:"bytes"`
		Size    int64  `json:"size"`
		Error   string `json:"error"`
	} `json:"progress"`
	Result *struct {
		Version string    `json:"version"`
		Outcome string    `json:"outcome"`
		Reason  string    `json:"reason"`
		At      time.Time `json:"at"`
	} `json:"result"`
}

// edgePollReply is the answer (edge/update.PollResponse).
type edgePollReply struct {
	Release json.RawMessage `json:"release"`
	URL     string          `json:"url,omitempty"`
}

// edgeSigned verifies the request's edgeauth signature and returns the
// appliance's edge and the body.
func (s *Server) edgeSigned(c echo.Context) (cloud.Edge, []byte, error) {
	signed, err := edgeauth.Verify(c.Request(), s.now())
	switch {
	case errors.Is(err, edgeauth.ErrSkew):
		return cloud.Edge{}, nil, newError(problem.Unauthorized, "The appliance's clock is %s off the cloud's; set its clock (NTP).", signed.Skew)
	case err != nil:
		return cloud.Edge{}, nil, newError(problem.Unauthorized, "Sign the request with the appliance's identity key: %v", err)
	}
	e, err := s.svc.EdgeByKey(c.Request().Context(), signed.Key)
	if errors.Is(err, cloud.ErrUnknownEdge) {
		return cloud.Edge{}, nil, newError(problem.Unauthorized, "No enrolled appliance has this identity key, or it was revoked.")
	}
	return e, signed.Body, err
}

// edgePoll is POST /v1/edge/update.
func (s *Server) edgePoll(c echo.Context) error {
	e, body, err := s.edgeSigned(c)
	if err != nil {
		return err
	}
	var in edgePollBody
	if err := json.Unmarshal(body, &in); err != nil {
		return newError(problem.BadRequest, "The body is not a poll: %v", err)
	}
	if err := release.ValidArch(in.Arch, in.ARM); err != nil {
		return invalid("body.arch", "%v", err)
	}
	var errs fieldErrors
	if !release.ValidVersion(in.Version) {
		errs.add("body.version", "must be a version (letters, digits, . + _ -, at most 64)")
	}
	if len(in.Slot) > 64 {
		errs.add("body.slot", "must be at most 64 bytes")
	}
	if p := in.Progress; p != nil {
		if !release.ValidState(p.State) {
			errs.add("body.progress.state", "must be idle, downloading, verifying or trial_requested")
		}
		if p.Version != "" && !release.ValidVersion(p.Version) {
			errs.add("body.progress.version", "must be a version")
		}
		if p.Bytes < 0 || p.Size < 0 {
			errs.add("body.progress", "bytes and size must not be negative")
		}
	}
	if r := in.Result; r != nil {
		if !release.ValidOutcome(r.Outcome) {
			errs.add("body.result.outcome", "must be committed, rolled_back or rejected")
		}
		if !release.ValidVersion(r.Version) {
			errs.add("body.result.version", "must be a version")
		}
		if r.At.IsZero() {
			errs.add("body.result.at", "is required: when the update ended")
		}
	}
	if err := errs.err(); err != nil {
		return err
	}
	u := cloud.EdgeUpdate{Version: in.Version, Slot: in.Slot, State: release.StateIdle}
	if p := in.Progress; p != nil {
		u.State, u.Target, u.Bytes, u.Size, u.Error = p.State, p.Version, p.Bytes, p.Size, p.Error
	}
	// A result is sent until acknowledged; the store keeps the last one.
	if r := in.Result; r != nil {
		at := r.At.UTC()
		u.LastVersion, u.LastOutcome, u.LastReason, u.LastAt = r.Version, r.Outcome, r.Reason, &at
	}
	platform := cloud.Platform(release.Manifest{Arch: in.Arch, ARM: in.ARM})
	rel, err := s.svc.EdgePoll(c.Request().Context(), e, platform, u)
	if err != nil {
		return err
	}
	out := edgePollReply{Release: json.RawMessage("null")}
	if rel != nil {
		out.Release, out.URL = rel.Envelope, "/v1/edge/releases/"+rel.Version+"/"+rel.Platform
	}
	return c.JSON(http.StatusOK, out)
}

// edgeRelease is GET /v1/edge/releases/{version}/{platform}: the bundle,
// with Range requests (http.ServeContent).
func (s *Server) edgeRelease(c echo.Context) error {
	if _, _, err := s.edgeSigned(c); err != nil {
		return err
	}
	version, platform := c.Param("version"), c.Param("platform")
	if !release.ValidVersion(version) || !cloud.ValidPlatform(platform) {
		return newError(problem.NotFound, "No release %s for %s.", version, platform)
	}
	// The request's deadline is the API's; a download gets its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), downloadTime)
	defer cancel()
	r, rd, err := s.svc.OpenRelease(ctx, version, platform)
	if errors.Is(err, cloud.ErrNotFound) {
		return newError(problem.NotFound, "No release %s for %s.", version, platform)
	}
	if err != nil {
		return err
	}
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(downloadTime))
	c.Response().Header().Set("Content-Type", "application/octet-stream")
	c.Response().Header().Set("ETag", `"`+r.SHA256+`"`)
	http.ServeContent(c.Response(), c.Request(), "svc-edge", r.AddedAt, rd)
	return nil
}

// Rollouts.

type rolloutWindowJSON struct {
	Start   string `json:"start"`
	Minutes int    `json:"minutes"`
}

type rolloutJSON struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	Version      string            `json:"version"`
	SiteIDs      []string          `json:"site_ids"`
	EdgeIDs      []string          `json:"edge_ids"`
	Window       rolloutWindowJSON `json:"window"`
	Deadline     *string           `json:"deadline"`
	FirstPercent int               `json:"first_percent"`
	State        string            `json:"state"`
	Reason       *string           `json:"reason"`
	CreatedAt    string            `json:"created_at"`
	CancelledAt  *string           `json:"cancelled_at"`
}

func renderRollout(r cloud.Rollout) rolloutJSON {
	out := rolloutJSON{ID: r.ID, Object: "rollout", Version: r.Version, SiteIDs: r.SiteIDs, EdgeIDs: r.EdgeIDs,
		Window:       rolloutWindowJSON{Start: fmt.Sprintf("%02d:%02d", r.WindowStart/60, r.WindowStart%60), Minutes: r.WindowMinutes},
		FirstPercent: r.FirstPercent, State: r.State, Reason: nullable(r.Reason), CreatedAt: ts(r.CreatedAt)}
	if r.Deadline != nil {
		d := ts(*r.Deadline)
		out.Deadline = &d
	}
	if r.CancelledAt != nil {
		d := ts(*r.CancelledAt)
		out.CancelledAt = &d
	}
	return out
}

func parseRollout(b *body) cloud.RolloutInput {
	in := cloud.RolloutInput{Version: b.str("version").Value, SiteIDs: b.strings("site_ids").Value, EdgeIDs: b.strings("edge_ids").Value,
		FirstPercent: 100}
	if p := b.integer("first_percent", 1, 100); p.Set {
		in.FirstPercent = p.Value
	}
	b.object("window", false, func(wb *body) {
		in.WindowStart = wb.str("start").Value
		in.WindowMinutes = wb.integer("minutes", int(cloud.MinUpdateWindow.Minutes()), int(cloud.MaxUpdateWindow.Minutes())).Value
	})
	if d := b.timestamp("deadline", true); d.Set {
		in.Deadline = d.Value
	}
	return in
}

func (s *Server) createRollout(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parseRollout, func(context.Context, cloud.RolloutInput) error { return nil })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/rollouts/", func(r cloud.Rollout) string { return r.ID }), renderRollout))
	r, err := s.svc.CreateRollout(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(r)
}

func (s *Server) listRollouts(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor")
	if err != nil {
		return err
	}
	t := tenant(c)
	scope := "rollouts\x00" + t.OrgID + "\x00" + string(t.Mode)
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	// An organisation has a handful of rollouts: paged in memory.
	all, err := s.svc.Store().Rollouts(c.Request().Context(), t)
	if err != nil {
		return err
	}
	var rows []cloud.Rollout
	for _, r := range all {
		if p.After != nil && !r.CreatedAt.Before(p.After.CreatedAt) && !(r.CreatedAt.Equal(p.After.CreatedAt) && r.ID < p.After.ID) {
			continue
		}
		rows = append(rows, r)
	}
	more := len(rows) > p.Limit
	if more {
		rows = rows[:p.Limit]
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Rollout) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderRollout))
}

func (s *Server) getRollout(c echo.Context) error {
	id, err := pathID(c, "rollout_id", ids.Rollout)
	if err != nil {
		return err
	}
	r, err := s.svc.Store().Rollout(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "rollout", id)
	}
	return c.JSON(http.StatusOK, renderRollout(r))
}

func (s *Server) cancelRollout(c echo.Context) error {
	id, err := pathID(c, "rollout_id", ids.Rollout)
	if err != nil {
		return err
	}
	if _, err := decode(c, true, func(*body) struct{} { return struct{}{} }, func(context.Context, struct{}) error { return nil }); err != nil {
		return err
	}
	send := answer(c, answerOK(renderRollout))
	r, err := s.svc.CancelRollout(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "rollout", id)
	}
	return send(r)
}
