package broker_test

import (
	"strings"
	"testing"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
)

// FuzzAccess: on any topic or filter, an edge may publish to exactly its
// own facts, resync and status topics and subscribe to exactly its site's
// changes and its own replies (never a wildcard, a shared subscription or
// another edge's or site's topic), and the cloud only under the protocol's
// root. Nothing panics.
func FuzzAccess(f *testing.F) {
	site := protocol.Site{Mode: "live", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
	edge := ids.New(ids.Edge)
	other := ids.New(ids.Edge)
	for _, s := range []string{site.Changes(), site.Facts(edge), site.Resync(edge), site.Replies(edge), site.Status(edge),
		site.Facts(other), site.Replies(other), site.EdgeFilter(), "#", "+", "svc/#", "svc/v1/#", "$share/g/svc/v1/#",
		"$share//svc/v1/#", "$share/g", "$SYS/#", site.Changes() + "/#", "svc/v1/+/+/sites/+/changes", "svc/v10/x", ""} {
		f.Add(s)
	}
	edgeAcc := broker.Access{Site: site, EdgeID: edge}
	cloudAcc := broker.Access{Cloud: true}
	mayPublish := []string{site.Facts(edge), site.Resync(edge), site.Status(edge)}
	maySubscribe := []string{site.Changes(), site.Replies(edge)}
	f.Fuzz(func(t *testing.T, topic string) {
		if edgeAcc.MayPublish(topic) && !contains(mayPublish, topic) {
			t.Fatalf("the edge may publish to %q", topic)
		}
		if edgeAcc.MaySubscribe(topic) && !contains(maySubscribe, topic) {
			t.Fatalf("the edge may subscribe to %q", topic)
		}
		if cloudAcc.MayPublish(topic) && topic != protocol.Root && !strings.HasPrefix(topic, protocol.Root+"/") {
			t.Fatalf("the cloud may publish to %q, outside %s", topic, protocol.Root)
		}
		if cloudAcc.MaySubscribe(topic) {
			f := topic
			if rest, ok := strings.CutPrefix(topic, "$share/"); ok {
				group, after, _ := strings.Cut(rest, "/")
				if group == "" || strings.ContainsAny(group, "+#") {
					t.Fatalf("the cloud may subscribe to %q: a shared subscription with group %q", topic, group)
				}
				f = after
			}
			if f != protocol.Root && !strings.HasPrefix(f, protocol.Root+"/") {
				t.Fatalf("the cloud may subscribe to %q, outside %s", topic, protocol.Root)
			}
		}
		if (broker.Access{}).MayPublish(topic) || (broker.Access{}).MaySubscribe(topic) {
			t.Fatalf("an empty access may touch %q", topic)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
