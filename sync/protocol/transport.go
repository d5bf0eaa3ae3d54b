package protocol

import (
	"net"
	"net/netip"
	"strings"
)

// Loopback reports whether host (a name or an IP address, without a port)
// is this machine: "localhost", or an address in 127.0.0.0/8 or ::1. Plain
// MQTT (tcp://, ws://) carries the broker password and every message in
// clear, so the protocol allows it only between processes on one machine:
// the embedded broker's plain listener binds only to such an address, and
// an edge connects in plain only to such a broker. Everything else is MQTT
// over TLS (ssl://, wss://).
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return err == nil && a.Unmap().IsLoopback()
}

// LoopbackAddr is Loopback for a host:port address; false when addr is not
// one, or names no host (":1883" listens everywhere).
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && Loopback(host)
}
