// Package dynsec keeps the edge–cloud protocol's accounts at a Mosquitto
// broker through its dynamic security plugin, so that a deployment on
// Mosquitto admits newly enrolled edges and cuts off revoked ones without
// anyone editing a password or ACL file (docs/decisions.md, "Edge
// accounts on Mosquitto").
//
// It may import the standard library, github.com/eclipse/paho.mqtt.golang,
// sync/protocol and shared/ packages; it knows nothing of the cloud's
// storage: the cloud decides which accounts should exist (cloud/edgesync
// wires the two).
//
// # The control API
//
// A Control connects to the broker as a client holding the plugin's admin
// role (the one `mosquitto_ctrl dynsec init FILE ADMIN` makes), publishes
// JSON commands to $CONTROL/dynamic-security/v1 and reads the answers on
// $CONTROL/dynamic-security/v1/response. Every client with the admin role
// receives every answer there, so each request carries a random
// correlationData and a Control keeps only the answer that names its own.
// It sends one request at a time, over one connection made when first
// needed and made again after it is lost.
//
// # Accounts
//
// An edge's account is a client whose username and client ID are the edge
// ID, with a role of the same name that may publish only to the edge's
// facts, resync and status topics and subscribe to and receive only its
// site's changes and its own replies: what the embedded broker enforces
// (sync/broker), and what docs/decisions.md's ACL file grants. The role
// also denies everything else explicitly, at a lower priority, so the
// account's rights do not depend on the plugin's default ACL access. The
// cloud's own account may use everything under protocol.Root, directly
// and through $share filters (role CloudRole).
//
// disableClient and deleteClient disconnect a connected client at once,
// as a change of its password or roles does (Mosquitto 2.0.11, tested);
// a change of a role's rules does not.
package dynsec
