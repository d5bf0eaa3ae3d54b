package dynsec

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
	"github.com/svc-vms/svc/sync/protocol"
)

// TestListClients_Pages reads every client a page at a time.
func TestListClients_Pages(t *testing.T) {
	defer func(n int) { listPage = n }(listPage)
	listPage = 2
	b := dynsectest.Start(t)
	c, err := New(Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
	require.NoError(t, err)
	defer c.Close()
	site := protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
	want := []string{dynsectest.Admin}
	for range 5 {
		id := ids.New(ids.Edge)
		require.NoError(t, c.PutEdge(t.Context(), site, id, "pw", time.Now()))
		want = append(want, id)
	}
	clients, err := c.ListClients(t.Context())
	require.NoError(t, err)
	var got []string
	for _, cl := range clients {
		got = append(got, cl.Username)
	}
	slices.Sort(got)
	slices.Sort(want)
	require.Equal(t, want, got)
}

// TestPutEdge_ExactRules: putting an edge again leaves its role with
// exactly EdgeACLs, and DeleteEdge removes the role with the client.
func TestPutEdge_ExactRules(t *testing.T) {
	b := dynsectest.Start(t)
	c, err := New(Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
	require.NoError(t, err)
	defer c.Close()
	site, edge := protocol.Site{Mode: "live", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}, ids.New(ids.Edge)
	b.Command(t, `[{"command":"createRole","rolename":"`+edge+`","acls":[{"acltype":"publishClientSend","topic":"#","allow":true}]}]`)
	require.NoError(t, c.PutEdge(t.Context(), site, edge, "pw", time.Now()))
	require.NoError(t, c.PutEdge(t.Context(), site, edge, "pw2", time.Now()))
	res, err := c.do(t.Context(), command{Command: "getRole", Rolename: edge})
	require.NoError(t, err)
	require.NoError(t, res[0].err())
	var role struct {
		Role struct {
			ACLs []ACL `json:"acls"`
		} `json:"role"`
	}
	require.NoError(t, json.Unmarshal(res[0].Data, &role))
	require.True(t, sameACLs(EdgeACLs(site, edge), role.Role.ACLs), "%+v", role.Role.ACLs)

	require.NoError(t, c.DeleteEdge(t.Context(), edge))
	res, err = c.do(t.Context(), command{Command: "getRole", Rolename: edge})
	require.NoError(t, err)
	require.Equal(t, msgRoleNotFound, res[0].Error)
}
