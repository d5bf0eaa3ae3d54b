package broker

import (
	"context"
	"strings"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// Authenticator says who a connecting client is. The cloud implements it
// over its store of edges and their credentials.
type Authenticator interface {
	// Authenticate returns the access of the client with these
	// credentials. Any error refuses the connection: unknown credentials,
	// a wrong password, a revoked edge, or a failure to look them up.
	Authenticate(ctx context.Context, username, password string) (Access, error)
}

// AuthenticatorFunc lets a function be an Authenticator.
type AuthenticatorFunc func(ctx context.Context, username, password string) (Access, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, username, password string) (Access, error) {
	return f(ctx, username, password)
}

// Access is what an authenticated client may touch.
type Access struct {
	// Cloud marks the cloud's own processes: everything under
	// protocol.Root, directly or through $share filters.
	Cloud bool
	// Site and EdgeID name an edge: its site's changes, and its own facts,
	// resync, status and replies topics. Ignored when Cloud is set.
	Site   protocol.Site
	EdgeID string
}

// valid reports whether a names a cloud client or a well-formed edge.
func (a Access) valid() bool {
	return a.Cloud || (a.Site.Valid() && ids.Valid(ids.Edge, a.EdgeID))
}

// MayPublish reports whether a client with this access may publish to
// topic: for an edge, exactly its own facts, resync and status topics.
func (a Access) MayPublish(topic string) bool {
	if a.Cloud {
		return underRoot(topic)
	}
	if !a.valid() {
		return false
	}
	return topic == a.Site.Facts(a.EdgeID) || topic == a.Site.Resync(a.EdgeID) || topic == a.Site.Status(a.EdgeID)
}

// MaySubscribe reports whether a client with this access may subscribe to
// filter, and be sent a message on a topic (the broker asks both): for an
// edge, exactly its site's changes topic or its own replies topic, no
// wildcards and no shared subscriptions.
func (a Access) MaySubscribe(filter string) bool {
	if a.Cloud {
		if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
			group, f, ok := strings.Cut(rest, "/")
			if !ok || group == "" || strings.ContainsAny(group, "+#") { // MQTT 5 §4.8.2: a share name has no wildcard
				return false
			}
			filter = f
		}
		return underRoot(filter)
	}
	if !a.valid() {
		return false
	}
	return filter == a.Site.Changes() || filter == a.Site.Replies(a.EdgeID)
}

// mayWill reports whether a client may leave topic as its last will: an
// edge only its status topic.
func (a Access) mayWill(topic string) bool {
	if a.Cloud {
		return underRoot(topic)
	}
	return a.valid() && topic == a.Site.Status(a.EdgeID)
}

func underRoot(topic string) bool {
	return topic == protocol.Root || strings.HasPrefix(topic, protocol.Root+"/")
}
