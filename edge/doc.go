// Package edge is the site appliance: it opens the cache (edge/cache),
// makes a gate.Gate for every configured gate with its relay, door sensor
// and readers (gate/relay, gate/reader), runs the MQTT sync half that main
// supplies, and serves the local HTTP API; App.Run runs it all and stops
// it all together.
//
// # Hardware
//
// The gates, their relays, door sensors and readers, and the kiosk's label
// and printer are a hardware document (shared/hardware): the cloud's, when
// the cache holds one for this edge (PATCH /v1/edges/{edge_id}, over the
// feed), else the configuration file's. The cache, the badge key, the
// sync half, the HTTP listeners and the kiosk live for the process; the
// hardware changes under them when the cloud's document does, without a
// restart (hardware.go): a scan under way completes on the old gates, one
// that arrives meanwhile waits, no relay is left energised, readers the
// new document keeps go on untouched. A document that fails to open (a
// pin or serial device missing, a port in use) leaves the previous
// hardware running; GET /status says why (hardware.error), and so does
// the sync half's status to the cloud (App.HardwareError). At the start, a
// cloud document that does not open gives way to the file's gates.
//
// It may import the standard library, golang.org/x/sync/errgroup,
// periph.io/x/conn (pin types, for the pin opener), edge/badgekey, edge/cache,
// edge/config, gate and its subpackages, kiosk, shared/ and sync/protocol; never
// a transport of its own (the MQTT half comes in through Syncer).
//
// # Local HTTP
//
// On config.Listen:
//
//	GET  /healthz                  200 {"status":"ok"} while the cache is open and fresh;
//	                               503 {"status":"unavailable","reason":...} otherwise
//	GET  /metrics                  Prometheus text format (below)
//	GET  /status                   StatusResponse: sync, sequence, outbox, cache, hardware, gates, broker, update
//	POST /gates/{gate_id}/scan     the body is a pass token; ScanResponse (svc-edge scan)
//	POST /gates/{gate_id}/frames   a camera's JPEG or PNG frame (gate/reader.Frames)
//
// "Fresh" is the gates' rule (gate.Staleness): the cloud's settings are
// here and the last sync is within the site's offline limit.
//
// # Metrics
//
//	svc_edge_decision_seconds{gate_id}               histogram: verify and decide
//	svc_edge_scans_total{gate_id,result,reason}      result is the fact recorded: check_in,
//	                                                 check_out, re_entry, entered or refused (with a reason)
//	svc_edge_scan_errors_total{gate_id,kind}         relay, record or abandoned
//	svc_edge_door_open{gate_id}                      gates with a door sensor
//	svc_edge_pruned_visits_total
//	svc_edge_outbox_facts                            outbox depth
//	svc_edge_outbox_oldest_age_seconds
//	svc_edge_sync_age_seconds                        +Inf before the first sync
//	svc_edge_cache_stale                             1 while gates that fail secure refuse
//	svc_edge_cache_seq, svc_edge_cache_visits, svc_edge_cache_gates, svc_edge_cache_keys
//	svc_edge_update_info{version,slot,state}         1; with svc_edge_update_download_bytes,
//	                                                 svc_edge_update_download_size_bytes and
//	                                                 svc_edge_update_last_failed (when main wires updates)
//
// # Scans
//
// Readers deliver through a debounce (Deps.Debounce, DefaultDebounce): the
// same text at the same gate within the window counts once. The scan
// endpoint is not debounced: a person asking twice means it. After every
// recorded fact the sync half's Notify is called, so the fact leaves at
// once when the broker is reachable.
//
// # Pruning
//
// At start and daily the App prunes the cache of visits whose pass ended
// more than PruneRetention ago (edge/cache's Prune).
package edge
