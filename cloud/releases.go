package cloud

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"regexp"
	"slices"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/release"
)

// This file is the cloud's side of signed updates (docs/decisions.md,
// "Signed updates (issue 17)"): the releases the publisher added, the
// rollouts an organisation schedules, and what an appliance is told when
// it polls (edge/update).

// ReleaseChunk is the size of the pieces a bundle is stored in, so that a
// download, or a resumed one, reads only the pieces it sends.
const ReleaseChunk = 1 << 20

// Release is a bundle and its signed manifest. Releases belong to the
// service, not to an organisation: the vendor publishes them.
type Release struct {
	Version  string
	Platform string // Platform(manifest): amd64, arm64, armv6, armv7
	Kind     string
	Size     int64
	SHA256   string
	// Envelope is the signed manifest's JSON, as the appliance verifies it.
	Envelope  []byte
	CreatedAt time.Time // the manifest's
	AddedAt   time.Time
}

// Platform names a manifest's architecture in URLs and rows: GOARCH, or
// "armv" and GOARM for arm.
func Platform(m release.Manifest) string {
	if m.Arch == "arm" {
		return "armv" + m.ARM
	}
	return m.Arch
}

var platformRE = regexp.MustCompile(`^(amd64|arm64|armv6|armv7)$`)

// ValidPlatform reports whether p is a Platform value.
func ValidPlatform(p string) bool { return platformRE.MatchString(p) }

// AddRelease stores the release env signs, with its bundle, which must
// match the manifest (release.ErrMismatch otherwise). The signature is
// checked against the key that made it, trusted when trusted is empty: the
// appliance is what refuses a key it was not built with. A version that
// exists for the platform returns an error wrapping ErrConflict.
func (s *Service) AddRelease(ctx context.Context, env release.Envelope, signer ed25519.PublicKey, bundle io.ReadSeeker) (Release, error) {
	m, err := env.Verify([]ed25519.PublicKey{signer})
	if err != nil {
		return Release{}, fmt.Errorf("add release: %w", err)
	}
	if err := m.Check(bundle); err != nil {
		return Release{}, fmt.Errorf("add release: %w", err)
	}
	if _, err := bundle.Seek(0, io.SeekStart); err != nil {
		return Release{}, fmt.Errorf("add release: %w", err)
	}
	r := Release{Version: m.Version, Platform: Platform(m), Kind: m.Kind, Size: m.Size, SHA256: m.SHA256,
		Envelope: env.Marshal(), CreatedAt: m.CreatedAt.UTC(), AddedAt: s.Now()}
	if err := s.store.AddRelease(ctx, r, bundle); err != nil {
		return Release{}, fmt.Errorf("add release: %w", err)
	}
	return r, nil
}

// OpenRelease returns a release and a reader of its bundle, which reads
// the stored pieces as it goes (for http.ServeContent's Range requests).
// ErrNotFound when there is no such release.
func (s *Service) OpenRelease(ctx context.Context, version, platform string) (Release, io.ReadSeeker, error) {
	r, err := s.store.Release(ctx, version, platform)
	if err != nil {
		return Release{}, nil, err
	}
	return r, &chunkReader{ctx: ctx, store: s.store, r: r}, nil
}

// chunkReader reads a stored bundle piece by piece.
type chunkReader struct {
	ctx   context.Context
	store Store
	r     Release
	off   int64
	idx   int    // the piece in buf, -1 for none
	buf   []byte // piece idx
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.off >= c.r.Size {
		return 0, io.EOF
	}
	idx := int(c.off / ReleaseChunk)
	if c.buf == nil || c.idx != idx {
		b, err := c.store.ReleaseChunk(c.ctx, c.r.Version, c.r.Platform, idx)
		if err != nil {
			return 0, fmt.Errorf("release %s %s: piece %d: %w", c.r.Version, c.r.Platform, idx, err)
		}
		c.buf, c.idx = b, idx
	}
	start := int(c.off - int64(idx)*ReleaseChunk)
	if start >= len(c.buf) {
		return 0, fmt.Errorf("release %s %s: piece %d is %d bytes: %w", c.r.Version, c.r.Platform, idx, len(c.buf), io.ErrUnexpectedEOF)
	}
	n := copy(p, c.buf[start:])
	c.off += int64(n)
	return n, nil
}

func (c *chunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += c.off
	case io.SeekEnd:
		offset += c.r.Size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek: before the start")
	}
	c.off = offset
	return offset, nil
}

// Rollout limits.
const (
	// MinUpdateWindow is the shortest update window: an appliance that is
	// busy, or offline, for an hour still gets its chance.
	MinUpdateWindow = 2 * time.Hour
	// MaxUpdateWindow is a whole day (a window of 24 hours is "any time").
	MaxUpdateWindow = 24 * time.Hour
)

// Rollout states.
const (
	RolloutActive    = "active"
	RolloutHalted    = "halted" // an appliance of the first stage failed
	RolloutCancelled = "cancelled"
)

// Rollout schedules a release for some of a tenant's appliances.
type Rollout struct {
	ID      string
	Tenant  Tenant
	Version string
	// SiteIDs and EdgeIDs choose the appliances: those of the sites and
	// those named; both empty, every appliance of the tenant.
	SiteIDs []string
	EdgeIDs []string
	// WindowStart is the update window's start in each site's local time,
	// minutes after midnight; WindowMinutes its length, 120 to 1440.
	WindowStart   int
	WindowMinutes int
	// Deadline is when appliances that have not yet updated do so at their
	// next poll, in the window or not; nil: only in the window.
	Deadline *time.Time
	// FirstPercent is the share of the appliances updated first (1 to
	// 100); the rest follow once every one of those committed. 100 is all
	// at once.
	FirstPercent int
	State        string
	// Reason says why a rollout halted.
	Reason      string
	CreatedAt   time.Time
	CancelledAt *time.Time
}

// RolloutInput is what a caller asks for.
type RolloutInput struct {
	Version       string
	SiteIDs       []string
	EdgeIDs       []string
	WindowStart   string // "HH:MM"
	WindowMinutes int
	Deadline      *time.Time
	FirstPercent  int
}

var clockRE = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])$`)

// CreateRollout validates in and stores a rollout. Every field is checked
// and a *ValidationError lists the bad ones: the version must have a
// release, the sites and edges must be the tenant's, the window at least
// MinUpdateWindow, the deadline in the future, FirstPercent 1 to 100.
func (s *Service) CreateRollout(ctx context.Context, t Tenant, in RolloutInput) (Rollout, error) {
	var v ValidationError
	now := s.Now()
	if !release.ValidVersion(in.Version) {
		v.Add("version", "must be a release version")
	} else if rs, err := s.store.ListReleases(ctx); err != nil {
		return Rollout{}, fmt.Errorf("create rollout: %w", err)
	} else if !slices.ContainsFunc(rs, func(r Release) bool { return r.Version == in.Version }) {
		v.Add("version", "no release with this version")
	}
	for i, id := range in.SiteIDs {
		if err := s.checkSite(ctx, &v, t, fmt.Sprintf("site_ids[%d]", i), id); err != nil {
			return Rollout{}, fmt.Errorf("create rollout: %w", err)
		}
	}
	for i, id := range in.EdgeIDs {
		field := fmt.Sprintf("edge_ids[%d]", i)
		if !checkID(&v, field, ids.Edge, id) {
			continue
		}
		if e, err := s.store.Edge(ctx, id); errors.Is(err, ErrNotFound) || (err == nil && e.Tenant != t) {
			v.Add(field, "no edge with this ID")
		} else if err != nil {
			return Rollout{}, fmt.Errorf("create rollout: %w", err)
		}
	}
	start := -1
	if m := clockRE.FindStringSubmatch(in.WindowStart); m == nil {
		v.Add("window.start", "must be a time of day, HH:MM")
	} else {
		start = int(m[1][0]-'0')*600 + int(m[1][1]-'0')*60 + int(m[2][0]-'0')*10 + int(m[2][1]-'0')
	}
	if d := time.Duration(in.WindowMinutes) * time.Minute; d < MinUpdateWindow || d > MaxUpdateWindow {
		v.Add("window.minutes", "must be from %d to %d", int(MinUpdateWindow.Minutes()), int(MaxUpdateWindow.Minutes()))
	}
	if in.Deadline != nil && !in.Deadline.After(now) {
		v.Add("deadline", "must be in the future")
	}
	if in.FirstPercent < 1 || in.FirstPercent > 100 {
		v.Add("first_percent", "must be from 1 to 100")
	}
	if err := v.Err(); err != nil {
		return Rollout{}, err
	}
	r := Rollout{ID: ids.New(ids.Rollout), Tenant: t, Version: in.Version, SiteIDs: in.SiteIDs, EdgeIDs: in.EdgeIDs,
		WindowStart: start, WindowMinutes: in.WindowMinutes, Deadline: in.Deadline, FirstPercent: in.FirstPercent,
		State: RolloutActive, CreatedAt: now}
	if r.SiteIDs == nil {
		r.SiteIDs = []string{}
	}
	if r.EdgeIDs == nil {
		r.EdgeIDs = []string{}
	}
	if r.Deadline != nil {
		d := r.Deadline.UTC()
		r.Deadline = &d
	}
	if err := respond(ctx, r); err != nil {
		return Rollout{}, fmt.Errorf("create rollout: %w", err)
	}
	if err := s.store.CreateRollout(ctx, r); err != nil {
		return Rollout{}, fmt.Errorf("create rollout: %w", err)
	}
	return r, nil
}

// Covers reports whether the rollout is for edge e.
func (r Rollout) Covers(e Edge) bool {
	if len(r.SiteIDs) == 0 && len(r.EdgeIDs) == 0 {
		return true
	}
	return slices.Contains(r.SiteIDs, e.SiteID) || slices.Contains(r.EdgeIDs, e.ID)
}

// InWindow reports whether at, in the site's zone loc, falls in the
// rollout's daily window (which may run past midnight).
func (r Rollout) InWindow(at time.Time, loc *time.Location) bool {
	l := at.In(loc)
	minute := l.Hour()*60 + l.Minute()
	since := (minute - r.WindowStart + 1440) % 1440
	return r.WindowMinutes >= 1440 || since < r.WindowMinutes
}

// FirstStage reports whether edge id is among the FirstPercent updated
// first: a hash of the rollout and the edge, so that the choice is stable
// and differs from one rollout to the next.
func (r Rollout) FirstStage(edgeID string) bool {
	h := fnv.New32a()
	_, _ = io.WriteString(h, r.ID+"/"+edgeID)
	return int(h.Sum32()%100) < r.FirstPercent
}

// MaxUpdateText bounds, in bytes, an appliance's update error and reason
// as the cloud keeps them: longer ones are cut.
const MaxUpdateText = 1000

// EdgeUpdate is what an appliance last said of its updates.
type EdgeUpdate struct {
	EdgeID  string
	Tenant  Tenant
	Version string // what it runs
	Slot    string
	State   string // idle, downloading, verifying, trial_requested
	Target  string // a download's version
	Bytes   int64
	Size    int64
	Error   string
	// The last update's outcome: committed, rolled_back or rejected.
	LastVersion string
	LastOutcome string
	LastReason  string
	LastAt      *time.Time
	PolledAt    time.Time
}

// rolloutBlocked says why a rollout's second stage waits: an appliance of
// the first stage has not yet committed the release ("" when none), and
// whether one failed it (the rollout halts).
func rolloutBlocked(r Rollout, edges []Edge, updates map[string]EdgeUpdate) (waiting string, failed *EdgeUpdate) {
	for _, e := range edges {
		if e.RevokedAt != nil || !r.Covers(e) || !r.FirstStage(e.ID) {
			continue
		}
		u, ok := updates[e.ID]
		switch {
		case ok && u.LastVersion == r.Version && u.LastOutcome != "" && u.LastOutcome != release.Committed:
			return e.ID, &u
		case !ok || u.Version != r.Version:
			waiting = e.ID
		}
	}
	return waiting, nil
}

// ErrUnknownEdge is returned by EdgePoll when no enrolled appliance has
// the identity key, or its edge is revoked.
var ErrUnknownEdge = errors.New("no enrolled appliance has this identity key")

// EdgePoll records what the appliance of edge e (EdgeByKey) said of its
// updates (u, whose EdgeID and Tenant it fills) and returns the release due
// for it now on its platform, nil when none is: the newest active rollout
// that covers it names a version it does not run, with a release for its
// platform, and it is in the window of its site's local time or past the
// deadline, and in the first stage or the first stage has committed. A
// first-stage appliance that reports the version failed halts the rollout.
func (s *Service) EdgePoll(ctx context.Context, e Edge, platform string, u EdgeUpdate) (*Release, error) {
	now := s.Now()
	u.EdgeID, u.Tenant, u.PolledAt = e.ID, e.Tenant, now
	// The appliance's words, shown in the fleet and its events, bounded.
	u.Error, u.LastReason = clipTo(u.Error, MaxUpdateText), clipTo(u.LastReason, MaxUpdateText)
	if err := s.putEdgeUpdate(ctx, e, u); err != nil {
		return nil, fmt.Errorf("edge poll: %w", err)
	}
	rollouts, err := s.store.Rollouts(ctx, e.Tenant)
	if err != nil {
		return nil, fmt.Errorf("edge poll: %w", err)
	}
	i := slices.IndexFunc(rollouts, func(r Rollout) bool { return r.Covers(e) && r.State != RolloutCancelled })
	if i < 0 || rollouts[i].State != RolloutActive || rollouts[i].Version == u.Version {
		return nil, nil
	}
	r := rollouts[i]
	if r.FirstStage(e.ID) && u.LastVersion == r.Version && u.LastOutcome != "" && u.LastOutcome != release.Committed {
		return nil, s.haltRollout(ctx, r, fmt.Sprintf("%s %s %s: %s", e.ID, u.LastOutcome, r.Version, u.LastReason))
	}
	if u.LastVersion == r.Version && u.LastOutcome != "" && u.LastOutcome != release.Committed {
		return nil, nil // failed here; the appliance does not try it again
	}
	site, err := s.store.Site(ctx, e.Tenant, e.SiteID)
	if err != nil {
		return nil, fmt.Errorf("edge poll: %w", err)
	}
	loc, err := time.LoadLocation(site.Timezone)
	if err != nil {
		loc = time.UTC
	}
	if !r.InWindow(now, loc) && (r.Deadline == nil || now.Before(*r.Deadline)) {
		return nil, nil
	}
	if r.FirstPercent < 100 && !r.FirstStage(e.ID) {
		edges, err := s.store.ListEdges(ctx, e.Tenant, "")
		if err != nil {
			return nil, fmt.Errorf("edge poll: %w", err)
		}
		updates, err := s.store.EdgeUpdates(ctx, e.Tenant, "")
		if err != nil {
			return nil, fmt.Errorf("edge poll: %w", err)
		}
		byEdge := map[string]EdgeUpdate{}
		for _, u := range updates {
			byEdge[u.EdgeID] = u
		}
		waiting, failed := rolloutBlocked(r, edges, byEdge)
		if failed != nil {
			return nil, s.haltRollout(ctx, r, fmt.Sprintf("%s %s %s: %s", failed.EdgeID, failed.LastOutcome, r.Version, failed.LastReason))
		}
		if waiting != "" {
			return nil, nil
		}
	}
	rel, err := s.store.Release(ctx, r.Version, platform)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // no build for this platform
	}
	if err != nil {
		return nil, fmt.Errorf("edge poll: %w", err)
	}
	return &rel, nil
}

func (s *Service) haltRollout(ctx context.Context, r Rollout, reason string) error {
	if err := s.store.SetRolloutState(ctx, r.Tenant, r.ID, RolloutHalted, reason, nil); err != nil {
		return fmt.Errorf("halt rollout: %w", err)
	}
	return nil
}

// CancelRollout stops a rollout: appliances that have not updated are not
// offered it again (those that did keep it). ErrNotFound when the tenant
// has no such rollout.
func (s *Service) CancelRollout(ctx context.Context, t Tenant, id string) (Rollout, error) {
	if !ids.Valid(ids.Rollout, id) {
		return Rollout{}, ErrNotFound
	}
	r, err := s.store.Rollout(ctx, t, id)
	if err != nil {
		return Rollout{}, err
	}
	if r.State != RolloutCancelled {
		now := s.Now()
		r.State, r.Reason, r.CancelledAt = RolloutCancelled, "", &now
	}
	// The answer is known before the write: rendered for it to store.
	if err := respond(ctx, r); err != nil {
		return Rollout{}, fmt.Errorf("cancel rollout: %w", err)
	}
	if err := s.store.SetRolloutState(ctx, t, id, RolloutCancelled, r.Reason, r.CancelledAt); err != nil {
		return Rollout{}, fmt.Errorf("cancel rollout: %w", err)
	}
	return r, nil
}

// EdgeByKey returns the live edge whose identity key this is, or
// ErrUnknownEdge.
func (s *Service) EdgeByKey(ctx context.Context, key ed25519.PublicKey) (Edge, error) {
	e, err := s.store.EdgeByIdentity(ctx, key)
	if errors.Is(err, ErrNotFound) || (err == nil && e.RevokedAt != nil) {
		return Edge{}, ErrUnknownEdge
	}
	return e, err
}
