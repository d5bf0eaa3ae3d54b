package httpapi

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddrs_Of(t *testing.T) {
	proxies := clientAddrs{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, c := range []struct {
		name, remote string
		xff          []string
		trust        clientAddrs
		want         string
	}{
		{"peer", "192.0.2.7:5555", nil, clientAddrs{}, "192.0.2.7"},
		{"no trusted proxies: the header is ignored", "192.0.2.7:5555", []string{"198.51.100.1"}, clientAddrs{}, "192.0.2.7"},
		{"untrusted peer: the header is ignored", "192.0.2.7:5555", []string{"198.51.100.1"}, proxies, "192.0.2.7"},
		{"trusted peer", "10.1.1.1:5555", []string{"198.51.100.1"}, proxies, "198.51.100.1"},
		{"the client's own entries are ignored", "10.1.1.1:5555", []string{"203.0.113.66, 198.51.100.1"}, proxies, "198.51.100.1"},
		{"trusted hops are skipped", "10.1.1.1:5555", []string{"203.0.113.66, 198.51.100.1, 10.2.2.2"}, proxies, "198.51.100.1"},
		{"several header lines", "10.1.1.1:5555", []string{"203.0.113.66", "198.51.100.1, 10.2.2.2"}, proxies, "198.51.100.1"},
		{"ports", "[fd00::1]:5555", []string{"[2001:db8::5]:443"}, proxies, "2001:db8::5"},
		{"IPv4-mapped", "[::ffff:10.1.1.1]:5555", []string{"::ffff:198.51.100.1"}, proxies, "198.51.100.1"},
		{"garbage stops at the last hop known", "10.1.1.1:5555", []string{"198.51.100.1, nonsense, 10.2.2.2"}, proxies, "10.2.2.2"},
		{"empty header", "10.1.1.1:5555", []string{""}, proxies, "10.1.1.1"},
		{"only trusted hops", "10.1.1.1:5555", []string{"10.3.3.3, 10.2.2.2"}, proxies, "10.3.3.3"},
		{"not TCP", "@", nil, proxies, "invalid IP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := c.trust.of(r).String(); got != c.want {
				t.Fatalf("of(%s, %q) = %s, want %s", c.remote, c.xff, got, c.want)
			}
		})
	}
}

func TestAddressBucket(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9": "2001:db8:1:2::/64",
		"::ffff:192.0.2.7":     "192.0.2.7",
	} {
		if got := addressBucket(netip.MustParseAddr(in)); got != want {
			t.Errorf("addressBucket(%s) = %s, want %s", in, got, want)
		}
	}
	if got := addressBucket(netip.Addr{}); got != "unknown" {
		t.Errorf("addressBucket(zero) = %s", got)
	}
}
