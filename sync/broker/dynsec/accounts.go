package dynsec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// The plugin's ACL types.
const (
	PublishClientSend    = "publishClientSend"
	PublishClientReceive = "publishClientReceive"
	SubscribeLiteral     = "subscribeLiteral"
	SubscribePattern     = "subscribePattern"
)

// ACL is one rule of a role. Within a client's role the rules of higher
// Priority are checked first, and the first whose topic matches decides.
type ACL struct {
	Type     string `json:"acltype"`
	Topic    string `json:"topic"`
	Priority int    `json:"priority"`
	Allow    bool   `json:"allow"`
}

// CloudRole is the role of the cloud's own account (PutCloud).
const CloudRole = "svc-cloud"

// edgeTextName marks the clients and roles PutEdge makes.
const edgeTextName = "svc edge"

// madePrefix starts the description PutEdge gives a client: the time it
// made it follows, in RFC 3339.
const madePrefix = "made "

// EdgeACLs are the rules of the edge's role: it may publish to its own
// facts, resync and status topics (its retained status and last will
// included), and subscribe to and receive its site's changes and its own
// replies, as exact topics. Everything else is denied at priority -1, below
// these, whatever the plugin's default access says.
func EdgeACLs(site protocol.Site, edgeID string) []ACL {
	return []ACL{
		{Type: PublishClientSend, Topic: site.Facts(edgeID), Allow: true},
		{Type: PublishClientSend, Topic: site.Resync(edgeID), Allow: true},
		{Type: PublishClientSend, Topic: site.Status(edgeID), Allow: true},
		{Type: SubscribeLiteral, Topic: site.Changes(), Allow: true},
		{Type: SubscribeLiteral, Topic: site.Replies(edgeID), Allow: true},
		{Type: PublishClientReceive, Topic: site.Changes(), Allow: true},
		{Type: PublishClientReceive, Topic: site.Replies(edgeID), Allow: true},
		{Type: PublishClientSend, Topic: "#", Priority: -1},
		{Type: SubscribePattern, Topic: "#", Priority: -1},
		{Type: PublishClientReceive, Topic: "#", Priority: -1},
	}
}

// CloudACLs are the rules of CloudRole: everything under protocol.Root,
// and shared subscriptions to it in any group. (Mosquitto 2.0.11 checks a
// $share filter as written, so svc/v1/# alone does not cover it.)
func CloudACLs() []ACL {
	return []ACL{
		{Type: PublishClientSend, Topic: protocol.Root + "/#", Allow: true},
		{Type: PublishClientReceive, Topic: protocol.Root + "/#", Allow: true},
		{Type: SubscribePattern, Topic: protocol.Root + "/#", Allow: true},
		{Type: SubscribePattern, Topic: "$share/+/" + protocol.Root + "/#", Allow: true},
	}
}

// PutEdge gives the edge edgeID of site an account with password: a client
// whose username and client ID are edgeID, holding a role of the same name
// with EdgeACLs and nothing else. A new client is described as made at
// made (Client.Made). An edge that has an account gets the password, and
// its role's rules are set again; a disabled account stays disabled.
// Changing the password of a connected client disconnects it. Errors wrap
// ErrUnavailable, or are a *CommandError.
func (c *Control) PutEdge(ctx context.Context, site protocol.Site, edgeID, password string, made time.Time) error {
	if !site.Valid() || !ids.Valid(ids.Edge, edgeID) {
		return fmt.Errorf("dynsec: put edge: %q at %q is not an edge of a site", edgeID, site.Prefix())
	}
	if password == "" {
		return errors.New("dynsec: put edge: the password is empty")
	}
	acls := EdgeACLs(site, edgeID)
	roles := []roleRef{{Rolename: edgeID}}
	res, err := c.do(ctx,
		command{Command: "createRole", Rolename: edgeID, TextName: edgeTextName, ACLs: acls},
		command{Command: "modifyRole", Rolename: edgeID, ACLs: acls},
		command{Command: "createClient", Username: edgeID, Password: password, ClientID: edgeID, TextName: edgeTextName,
			TextDescription: madePrefix + made.UTC().Format(time.RFC3339), Roles: roles},
		// The client may have been there: its password, client ID and
		// role are set again (for a new one, to what it has).
		command{Command: "modifyClient", Username: edgeID, Password: password, ClientID: edgeID, Roles: roles},
	)
	if err != nil {
		return fmt.Errorf("put edge %s: %w", edgeID, err)
	}
	for i, ok := range [][]string{{msgRoleExists}, nil, {msgClientExists}, nil} {
		if err := res[i].err(ok...); err != nil {
			return fmt.Errorf("put edge %s: %w", edgeID, err)
		}
	}
	return nil
}

// PutCloud gives the cloud's own connections an account: username with
// password and CloudRole, made when missing. An account that exists keeps
// its password (setting it would disconnect every cloud process using it;
// change it with mosquitto_ctrl dynsec setClientPassword) and gets
// CloudRole when it lacks it. The role's rules are set to CloudACLs when
// they differ. Errors wrap ErrUnavailable, or are a *CommandError.
func (c *Control) PutCloud(ctx context.Context, username, password string) error {
	if username == "" || password == "" {
		return errors.New("dynsec: put cloud: the username or password is empty")
	}
	want := CloudACLs()
	res, err := c.do(ctx,
		command{Command: "createRole", Rolename: CloudRole, TextName: "svc cloud", ACLs: want},
		command{Command: "getRole", Rolename: CloudRole},
		command{Command: "createClient", Username: username, Password: password, TextName: "svc cloud", Roles: []roleRef{{Rolename: CloudRole}}},
		command{Command: "getClient", Username: username},
	)
	if err != nil {
		return fmt.Errorf("put cloud account %s: %w", username, err)
	}
	for i, ok := range [][]string{{msgRoleExists}, nil, {msgClientExists}, nil} {
		if err := res[i].err(ok...); err != nil {
			return fmt.Errorf("put cloud account %s: %w", username, err)
		}
	}
	var role struct {
		Role struct {
			ACLs []ACL `json:"acls"`
		} `json:"role"`
	}
	var client struct {
		Client wireClient `json:"client"`
	}
	if err := json.Unmarshal(res[1].Data, &role); err != nil {
		return fmt.Errorf("put cloud account %s: getRole's answer: %w", username, err)
	}
	if err := json.Unmarshal(res[3].Data, &client); err != nil {
		return fmt.Errorf("put cloud account %s: getClient's answer: %w", username, err)
	}
	var fix []command
	if !sameACLs(role.Role.ACLs, want) {
		fix = append(fix, command{Command: "modifyRole", Rolename: CloudRole, ACLs: want})
	}
	if !slices.Contains(client.Client.client().Roles, CloudRole) {
		fix = append(fix, command{Command: "addClientRole", Username: username, Rolename: CloudRole})
	}
	if len(fix) == 0 {
		return nil
	}
	if res, err = c.do(ctx, fix...); err != nil {
		return fmt.Errorf("put cloud account %s: %w", username, err)
	}
	for _, r := range res {
		if err := r.err(); err != nil {
			return fmt.Errorf("put cloud account %s: %w", username, err)
		}
	}
	return nil
}

// sameACLs reports whether a and b hold the same rules, in any order.
func sameACLs(a, b []ACL) bool {
	cmp := func(x, y ACL) int {
		return strings.Compare(fmt.Sprint(x.Type, x.Topic, x.Priority, x.Allow), fmt.Sprint(y.Type, y.Topic, y.Priority, y.Allow))
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

// Client is a client of the plugin as ListClients reports it.
type Client struct {
	Username        string
	ClientID        string // "" when any client ID may use it
	TextName        string
	TextDescription string
	Disabled        bool
	Roles           []string
}

// Made returns when PutEdge made the client, and false for a client whose
// description does not say (one made otherwise).
func (c Client) Made() (time.Time, bool) {
	s, ok := strings.CutPrefix(c.TextDescription, madePrefix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, err == nil
}

// wireClient is a client as the plugin's listClients and getClient
// answer.
type wireClient struct {
	Username        string    `json:"username"`
	ClientID        string    `json:"clientid"`
	TextName        string    `json:"textname"`
	TextDescription string    `json:"textdescription"`
	Disabled        bool      `json:"disabled"`
	Roles           []roleRef `json:"roles"`
}

func (w wireClient) client() Client {
	c := Client{Username: w.Username, ClientID: w.ClientID, TextName: w.TextName, TextDescription: w.TextDescription, Disabled: w.Disabled}
	for _, r := range w.Roles {
		c.Roles = append(c.Roles, r.Rolename)
	}
	return c
}

// listPage is how many clients one listClients asks for, which keeps an
// answer well under a broker's packet limits (a variable for a test).
var listPage = 500

// ListClients returns every client of the plugin, in the plugin's order,
// read a page at a time: a client made or deleted meanwhile may be missed
// or reported twice. Errors wrap ErrUnavailable, or are a *CommandError.
func (c *Control) ListClients(ctx context.Context) ([]Client, error) {
	var out []Client
	for {
		res, err := c.do(ctx, command{Command: "listClients", Verbose: true, Count: listPage, Offset: len(out)})
		if err != nil {
			return nil, fmt.Errorf("list clients: %w", err)
		}
		if err := res[0].err(); err != nil {
			return nil, fmt.Errorf("list clients: %w", err)
		}
		var page struct {
			TotalCount int          `json:"totalCount"`
			Clients    []wireClient `json:"clients"`
		}
		if err := json.Unmarshal(res[0].Data, &page); err != nil {
			return nil, fmt.Errorf("list clients: the plugin's answer: %w", err)
		}
		for _, w := range page.Clients {
			out = append(out, w.client())
		}
		if len(page.Clients) == 0 || len(out) >= page.TotalCount {
			return out, nil
		}
	}
}

// DisableClient refuses the client's connections from now on and
// disconnects those it has; disabling it again changes nothing. Errors:
// ErrNotFound (wrapped) when there is no such client, else wrapping
// ErrUnavailable, or a *CommandError.
func (c *Control) DisableClient(ctx context.Context, username string) error {
	res, err := c.do(ctx, command{Command: "disableClient", Username: username})
	if err != nil {
		return fmt.Errorf("disable client %s: %w", username, err)
	}
	if res[0].Error == msgClientNotFound {
		return fmt.Errorf("disable client %s: %w", username, ErrNotFound)
	}
	if err := res[0].err(); err != nil {
		return fmt.Errorf("disable client %s: %w", username, err)
	}
	return nil
}

// DeleteEdge deletes the edge's client, which disconnects it, and then
// its role (deleting a role a client still holds corrupts that client's
// roles in Mosquitto 2.0.11, hence the order). Errors: ErrNotFound
// (wrapped) when there is no such client (its role, if any, is deleted
// all the same), else wrapping ErrUnavailable, or a *CommandError.
func (c *Control) DeleteEdge(ctx context.Context, edgeID string) error {
	if !ids.Valid(ids.Edge, edgeID) {
		return fmt.Errorf("dynsec: delete edge: %q is not an edge ID", edgeID)
	}
	res, err := c.do(ctx, command{Command: "deleteClient", Username: edgeID}, command{Command: "deleteRole", Rolename: edgeID})
	if err != nil {
		return fmt.Errorf("delete edge %s: %w", edgeID, err)
	}
	if err := res[1].err(msgRoleNotFound); err != nil {
		return fmt.Errorf("delete edge %s: %w", edgeID, err)
	}
	if res[0].Error == msgClientNotFound {
		return fmt.Errorf("delete edge %s: %w", edgeID, ErrNotFound)
	}
	if err := res[0].err(); err != nil {
		return fmt.Errorf("delete edge %s: %w", edgeID, err)
	}
	return nil
}
