// Package sitetest runs a whole site in one test binary, for the
// end-to-end tests of the edge–cloud sync (DESIGN.md, "Edge and cloud over
// MQTT"; STYLE T5):
//
//   - a cloud process: a cloud.Service on a real store (SQLite in a
//     temporary directory; PostgreSQL on a fresh schema when
//     SVC_TEST_POSTGRES_URL is set) and the cloud half of the sync
//     (sync/mqttsync) over cloud/edgesync, as svc-cloud wires them;
//   - a broker: the embedded sync/broker on 127.0.0.1:0 with svc-cloud's
//     authenticator, or the Mosquitto at SVC_TEST_MQTT_URL (anonymous, no
//     ACL; every World has an organisation of its own, and its cloud halves
//     read only that organisation's topics, so tests sharing it do not take
//     each other's messages);
//   - edges: the appliance's edge.App from a configuration file the harness
//     writes, with simulated relay pins, TCP readers, its bbolt cache in a
//     temporary directory and the MQTT edge half, reaching the broker
//     through a Proxy the test can cut (a Mosquitto it cannot stop). An edge
//     runs in the test process (Edge.Start) or as a child process, the test
//     binary run again (Edge.StartChild), so that a test can kill it with
//     SIGKILL; a test binary that uses StartChild calls MainChild first
//     thing in its TestMain.
//
// The cloud halves reach the broker through a proxy too, so that
// World.BrokerDown can take the broker from everyone: it stops the
// embedded one (which loses its sessions, as a restart does) or cuts
// Mosquitto off. World.StopCloud, StartCloud and RestartCloud stop the
// cloud half, or the whole cloud process, under a running site;
// World.AddProcess starts a second cloud process on the same PostgreSQL
// database. What the cloud recorded is read back through the store and,
// for "exactly once", with a query of the harness's own (World.FactRows);
// an edge's cache through its View, compared with the cloud's snapshot by
// World.CacheDiff.
//
// Each combination runs as a subtest: Each gives "embedded/sqlite",
// "embedded/postgres", "mosquitto/sqlite" and "mosquitto/postgres", and
// skips those whose service is not configured, unless
// SVC_TEST_REQUIRE_SERVICES=1 makes that a failure. The sync halves run
// with short timeouts (an acknowledgement waits a second, a resync is asked
// every second) so that outages and restarts heal in test time.
//
// Helpers take a testing.TB, call Helper and clean up with Cleanup. Waiting
// is polling with a deadline (Eventually), never a sleep.
//
// It may import what the mains import: cloud and its stores, edge and its
// cache and config, sync/..., paho and pgx. Nothing but tests imports it.
package sitetest
