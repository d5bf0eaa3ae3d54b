package protocol

import (
	"errors"
	"strings"

	"github.com/svc-vms/svc/shared/ids"
)

// Root is the first two levels of every topic.
const Root = "svc/v1"

// Shared subscriptions through which cloud processes divide the inbound
// topics of every site between them.
const (
	shareGroup   = "$share/svc-cloud/"
	SharedFacts  = shareGroup + Root + "/+/+/sites/+/edges/+/facts"
	SharedResync = shareGroup + Root + "/+/+/sites/+/edges/+/resync"
	SharedStatus = shareGroup + Root + "/+/+/sites/+/edges/+/status"
)

// DefaultShareGroup is the share group of SharedFacts, SharedResync and
// SharedStatus.
const DefaultShareGroup = "svc-cloud"

// SharedFilters are SharedFacts, SharedResync and SharedStatus in the
// share group group instead of DefaultShareGroup: on a broker that lets
// other clients join a group (Mosquitto with ACL files), a group name of
// the cloud's own keeps them from taking its turns.
func SharedFilters(group string) []string {
	prefix := "$share/" + group + "/"
	return []string{prefix + strings.TrimPrefix(SharedFacts, shareGroup), prefix + strings.TrimPrefix(SharedResync, shareGroup),
		prefix + strings.TrimPrefix(SharedStatus, shareGroup)}
}

// ValidShareGroup says whether group may name a share group: MQTT
// forbids '/', '+' and '#' in it.
func ValidShareGroup(group string) bool {
	return group != "" && !strings.ContainsAny(group, "/+#")
}

// Site names a site's topics: its organisation, mode and ID.
type Site struct {
	Mode   string // live or test
	OrgID  string
	SiteID string
}

// Valid reports whether every part is well formed.
func (s Site) Valid() bool {
	return (s.Mode == "live" || s.Mode == "test") && ids.Valid(ids.Organisation, s.OrgID) && ids.Valid(ids.Site, s.SiteID)
}

// Prefix is the topic every topic of the site starts with, without a
// trailing slash.
func (s Site) Prefix() string {
	return Root + "/" + s.Mode + "/" + s.OrgID + "/sites/" + s.SiteID
}

// Changes is the site's change feed.
func (s Site) Changes() string { return s.Prefix() + "/changes" }

// Facts is where one edge publishes its facts. The topic names the edge, so
// a broker's access rules can keep an edge from publishing facts in
// another's name, and the cloud refuses a fact naming another edge than
// its topic.
func (s Site) Facts(edgeID string) string { return s.Prefix() + "/edges/" + edgeID + "/facts" }

// Resync is where an edge asks for the changes it missed.
func (s Site) Resync(edgeID string) string { return s.Prefix() + "/edges/" + edgeID + "/resync" }

// Replies is where the cloud answers one edge.
func (s Site) Replies(edgeID string) string { return s.Prefix() + "/edges/" + edgeID + "/replies" }

// Status is an edge's retained status.
func (s Site) Status(edgeID string) string { return s.Prefix() + "/edges/" + edgeID + "/status" }

// EdgeFilter is the topic filter of everything an edge may touch: the
// broker's access rule for it.
func (s Site) EdgeFilter() string { return s.Prefix() + "/#" }

// Kind says which of a site's topics a topic is.
type Kind string

// The topic kinds.
const (
	KindChanges Kind = "changes"
	KindFacts   Kind = "facts"
	KindResync  Kind = "resync"
	KindReplies Kind = "replies"
	KindStatus  Kind = "status"
)

// ErrTopic is returned for a topic that is none of the protocol's.
var ErrTopic = errors.New("protocol: not a topic of this protocol")

// ParseTopic splits a topic into its site, kind and (for the per-edge
// topics) edge ID. Anything else is ErrTopic.
func ParseTopic(topic string) (Site, Kind, string, error) {
	parts := strings.Split(topic, "/")
	// svc v1 {mode} {org} sites {site} ...
	if len(parts) < 7 || parts[0] != "svc" || parts[1] != "v1" || parts[4] != "sites" {
		return Site{}, "", "", ErrTopic
	}
	s := Site{Mode: parts[2], OrgID: parts[3], SiteID: parts[5]}
	if !s.Valid() {
		return Site{}, "", "", ErrTopic
	}
	rest := parts[6:]
	switch {
	case len(rest) == 1 && rest[0] == string(KindChanges):
		return s, KindChanges, "", nil
	case len(rest) == 3 && rest[0] == "edges" && ids.Valid(ids.Edge, rest[1]):
		switch k := Kind(rest[2]); k {
		case KindFacts, KindResync, KindReplies, KindStatus:
			return s, k, rest[1], nil
		}
	}
	return Site{}, "", "", ErrTopic
}
