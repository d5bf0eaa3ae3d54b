// Package broker is the embedded MQTT broker (mochi-mqtt) that a site's
// edges and the cloud's processes meet on when no external broker such as
// Mosquitto is deployed, with the access rules of the edge–cloud protocol.
//
// It may import the standard library, github.com/mochi-mqtt/server/v2,
// sync/protocol and shared/ packages; it knows nothing of the cloud's or the
// edge's storage: an Authenticator, which the cloud provides, says who a
// username and password are.
//
// # Access
//
// Every connection is authenticated; unknown credentials are refused in the
// CONNACK (an MQTT 3.1.1 client sees "not authorised"). The cloud's own clients (Access.Cloud) may
// publish and subscribe anywhere under protocol.Root, directly or through
// "$share/{group}/" filters. An edge must connect with its edge ID as its
// client ID (so that it cannot take over another edge's persistent session),
// and may only
//
//   - publish to its own facts, resync and status topics (retained allowed; its last will must be its status
//     topic, or the connection is refused);
//   - subscribe to its site's changes topic and its own replies topic, as
//     exact filters without wildcards.
//
// Anything else is refused: a subscription gets a failure return code, and
// a QoS 1 publish makes the broker close an MQTT 3.1.1 connection (mochi's
// behaviour for a refused publish without MQTT 5 reason codes). The same
// rules for Mosquitto are in docs/decisions.md.
//
// # Listeners
//
// A plain TCP listener (Config.Listen) may bind only to a loopback address:
// plain MQTT carries passwords in clear. Edges elsewhere connect to the TLS
// listener (Config.TLSListen), whose certificate is an operator's or one
// EnsureCerts makes under a private CA kept beside it; edges trust that CA
// alone (edge/config's broker.ca).
//
// # State
//
// Sessions, queued messages and retained messages live in memory: a restart
// loses them. The protocol does not rely on them surviving: an edge asks for
// what it missed and republishes unacknowledged facts on every connection.
package broker
