package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/mqttsync"
)

// storeCollector reads the store's statistics at each scrape.
type storeCollector struct {
	store cloud.Store
}

var (
	descConns = prometheus.NewDesc("svc_cloud_db_connections",
		"Database connections open now, by pool and state (in_use, idle).", []string{"pool", "state"}, nil)
	descConnsMax = prometheus.NewDesc("svc_cloud_db_connections_max",
		"Most database connections the pool may open.", []string{"pool"}, nil)
	descWaits = prometheus.NewDesc("svc_cloud_db_connection_waits_total",
		"Times a caller found no free connection in the pool and waited for one.", []string{"pool"}, nil)
	descWaitSeconds = prometheus.NewDesc("svc_cloud_db_connection_wait_seconds_total",
		"Time callers spent waiting for a free connection in the pool.", []string{"pool"}, nil)
	descErrors = prometheus.NewDesc("svc_cloud_db_statement_errors_total",
		"Statements the database failed, by kind: unavailable (unreachable, timed out), canceled (the caller went away), "+
			"constraint (a unique key or reference refused the write; some answer requests with 409), other. PostgreSQL only.",
		[]string{"kind"}, nil)
	descCheckpoints = prometheus.NewDesc("svc_cloud_db_wal_checkpoints_total",
		"Checkpoints of SQLite's write-ahead log made by the store's checkpointer, by result: done, failed. SQLite only.",
		[]string{"result"}, nil)
	descWALFrames = prometheus.NewDesc("svc_cloud_db_wal_frames",
		"Pages in SQLite's write-ahead log at the last checkpoint, by state: logged (the log's length), "+
			"uncopied (those the checkpoint left, a reader still reading them). SQLite only.",
		[]string{"state"}, nil)
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConns, descConnsMax, descWaits, descWaitSeconds, descErrors, descCheckpoints, descWALFrames} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Stats()
	for _, p := range st.Pools {
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(p.InUse), p.Name, "in_use")
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(p.Idle), p.Name, "idle")
		ch <- prometheus.MustNewConstMetric(descConnsMax, prometheus.GaugeValue, float64(p.MaxOpen), p.Name)
		ch <- prometheus.MustNewConstMetric(descWaits, prometheus.CounterValue, float64(p.Waits), p.Name)
		ch <- prometheus.MustNewConstMetric(descWaitSeconds, prometheus.CounterValue, p.WaitTime.Seconds(), p.Name)
	}
	if e := st.Errors; e != nil {
		for _, k := range []struct {
			kind string
			n    int64
		}{{"unavailable", e.Unavailable}, {"canceled", e.Canceled}, {"constraint", e.Constraint}, {"other", e.Other}} {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(k.n), k.kind)
		}
	}
	if w := st.WAL; w != nil {
		ch <- prometheus.MustNewConstMetric(descCheckpoints, prometheus.CounterValue, float64(w.Checkpoints), "done")
		ch <- prometheus.MustNewConstMetric(descCheckpoints, prometheus.CounterValue, float64(w.Failed), "failed")
		ch <- prometheus.MustNewConstMetric(descWALFrames, prometheus.GaugeValue, float64(w.Frames), "logged")
		ch <- prometheus.MustNewConstMetric(descWALFrames, prometheus.GaugeValue, float64(w.Uncopied), "uncopied")
	}
}

// syncCollector reads the MQTT sync's state at each scrape: its
// connection, and the counters it keeps since the process started.
type syncCollector struct {
	state func() mqttsync.CloudState
}

var (
	descConnected = prometheus.NewDesc("svc_cloud_mqtt_connected",
		"1 while the process is connected to its MQTT broker, else 0.", nil, nil)
	descFacts = prometheus.NewDesc("svc_cloud_mqtt_facts_total",
		"Facts from edges by result: applied (now, or before: a redelivery), rejected (refused for good: malformed, "+
			"or not from the site's edge), failed (a transient error: not acknowledged, so the edge sends it again).",
		[]string{"result"}, nil)
	descDropped = prometheus.NewDesc("svc_cloud_mqtt_messages_dropped_total",
		"MQTT messages dropped unread: malformed, on a foreign topic, or arriving with the inbox full.", nil, nil)
	descChanges = prometheus.NewDesc("svc_cloud_mqtt_feed_changes_sent_total",
		"Changes published on the sites' feeds to their edges.", nil, nil)
)

func (c syncCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnected, descFacts, descDropped, descChanges} {
		ch <- d
	}
}

func (c syncCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.state()
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, connected)
	ch <- prometheus.MustNewConstMetric(descFacts, prometheus.CounterValue, float64(st.FactsApplied), "applied")
	ch <- prometheus.MustNewConstMetric(descFacts, prometheus.CounterValue, float64(st.FactsRejected), "rejected")
	ch <- prometheus.MustNewConstMetric(descFacts, prometheus.CounterValue, float64(st.FactsFailed), "failed")
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(st.Dropped))
	ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, float64(st.ChangesSent))
}
