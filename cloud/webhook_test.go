package cloud_test

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

// webhookAddrCases are the addresses the webhook policy is held to: every
// IPv6 form that carries an IPv4 address, with the IPv4 address it
// carries, and the reserved ranges. refused is the word the reason holds;
// empty means allowed.
var webhookAddrCases = []struct {
	addr, refused string
}{
	// IPv4.
	{"93.184.215.14", ""},
	{"8.8.8.8", ""},
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"10.1.2.3", "private"},
	{"172.16.0.1", "private"},
	{"192.168.0.10", "private"},
	{"169.254.169.254", "link-local"},
	{"224.0.0.1", "link-local"}, // link-local multicast
	{"239.1.2.3", "multicast"},
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "reserved"},
	{"100.64.0.1", "reserved"},
	{"192.0.0.8", "reserved"},
	{"192.0.2.1", "reserved"},
	{"198.51.100.7", "reserved"},
	{"203.0.113.9", "reserved"},
	{"192.88.99.1", "reserved"},
	{"198.18.0.1", "reserved"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "reserved"},

	// IPv6.
	{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
	{"::1", "loopback"},
	{"::", "unspecified"},
	{"fc00::1", "private"},
	{"fd12:3456::1", "private"},
	{"fe80::1", "link-local"},
	{"ff02::1", "link-local"}, // link-local multicast
	{"ff0e::1", "multicast"},
	{"fec0::1", "reserved"},
	{"feff::1", "reserved"},
	{"2001:db8::1", "reserved"},
	{"2001:db8:ffff::1", "reserved"},
	{"3fff::1", "reserved"},
	{"100::1", "reserved"},
	{"2001:2::1", "reserved"},
	{"2001:10::1", "reserved"},
	{"64:ff9b:1::a00:1", "reserved"},
	{"64:ff9b:1::808:808", "reserved"},

	// IPv4-mapped: the IPv4 address itself.
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:7f00:1", "loopback"},
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:169.254.169.254", "link-local"},
	{"::ffff:192.0.2.1", "reserved"},
	{"::ffff:8.8.8.8", ""},
	// IPv4-compatible (deprecated): refused whatever it carries.
	{"::127.0.0.1", "loopback"},
	{"::7f00:1", "loopback"},
	{"::10.0.0.1", "private"},
	{"::169.254.169.254", "link-local"},
	{"::8.8.8.8", "reserved"},
	// IPv4-translated (SIIT, ::ffff:0:0:0/96).
	{"::ffff:0:7f00:1", "loopback"},
	{"::ffff:0:127.0.0.1", "loopback"},
	{"::ffff:0:a9fe:a9fe", "link-local"},
	{"::ffff:0:c000:201", "reserved"},
	{"::ffff:0:808:808", ""},
	// NAT64, well-known prefix: a DNS64 network's way to a public IPv4.
	{"64:ff9b::127.0.0.1", "loopback"},
	{"64:ff9b::7f00:1", "loopback"},
	{"64:ff9b::a00:1", "private"},
	{"64:ff9b::a9fe:a9fe", "link-local"},
	{"64:ff9b::c633:6401", "reserved"},
	{"64:ff9b::808:808", ""},
	// 6to4.
	{"2002:7f00:1::1", "loopback"},
	{"2002:a00:1::", "private"},
	{"2002:c0a8:1::1", "private"},
	{"2002:a9fe:a9fe::1", "link-local"},
	{"2002:cb00:7101::1", "reserved"},
	{"2002:808:808::1", ""},
	// Teredo: server in bits 32-63, client inverted in the last 32.
	{"2001:0:7f00:1:0:0:f7f7:f7f7", "loopback"},          // server 127.0.0.1, client 8.8.8.8
	{"2001:0:808:808:0:0:80ff:fffe", "loopback"},         // server 8.8.8.8, client 127.0.0.1
	{"2001:0:808:808:0:0:f5ff:fffe", "private"},          // client 10.0.0.1
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"}, // RFC 4380's example: client 192.0.2.45
	{"2001:0:808:808:0:0:f7f7:f7f7", ""},                 // both 8.8.8.8
}

// The policy refuses every form that reaches an address the IPv4 rules
// refuse, and the reserved IPv6 ranges, in both modes; allowing loopback
// in test mode allows the loopback addresses themselves (and IPv4-mapped
// loopback, which is the same socket), not loopback carried by another
// form.
func TestCheckWebhookAddr_EveryForm(t *testing.T) {
	strict := cloud.WebhookPolicy{}
	loose := cloud.WebhookPolicy{AllowLoopbackInTest: true}
	for _, c := range webhookAddrCases {
		t.Run(c.addr, func(t *testing.T) {
			a := netip.MustParseAddr(c.addr)
			for _, mode := range []cloud.Mode{cloud.ModeLive, cloud.ModeTest} {
				err := strict.CheckWebhookAddr(mode, a)
				if c.refused == "" {
					require.NoError(t, err, mode)
				} else {
					require.ErrorContains(t, err, c.refused, mode)
				}
			}
			err := loose.CheckWebhookAddr(cloud.ModeTest, a)
			direct := a.Unmap().IsLoopback()
			switch {
			case c.refused == "" || direct:
				require.NoError(t, err, "test mode allowing loopback")
			default:
				require.ErrorContains(t, err, c.refused, "test mode allowing loopback")
			}
			err = loose.CheckWebhookAddr(cloud.ModeLive, a)
			if c.refused == "" {
				require.NoError(t, err, "live mode")
			} else {
				require.ErrorContains(t, err, c.refused, "live mode never allows loopback")
			}
		})
	}
}

// An address with a zone is link-local whatever its digits say.
func TestCheckWebhookAddr_ZoneIsRefused(t *testing.T) {
	for _, s := range []string{"fe80::1%eth0", "2001:db8::1%1", "2606:2800:21f:cb07:6820:80da:af6b:8b2c%eth0"} {
		require.ErrorContains(t, cloud.WebhookPolicy{}.CheckWebhookAddr(cloud.ModeLive, netip.MustParseAddr(s)), "zone", s)
	}
}

// FuzzWebhookURL holds CheckWebhookURL to the address rules: no URL it
// accepts, in either mode, names by IP literal an address that is
// loopback, private, link-local, multicast or unspecified, in any IPv6
// spelling that carries one, nor a numeric last label; and an accepted URL
// is an absolute http(s) URL without user info or fragment.
func FuzzWebhookURL(f *testing.F) {
	for _, u := range []string{
		"https://hooks.example.com/in", "https://[::127.0.0.1]/", "https://[::ffff:0:7f00:1]/", "https://[64:ff9b::a9fe:a9fe]/",
		"https://[2002:7f00:1::1]/", "https://[2001:0:7f00:1::f7f7:f7f7]/", "https://[fe80::1%25eth0]/", "https://127.1/",
		"https://0x7f.1/", "http://localhost./", "https://8.8.8.8:443/x?y#", "https://[fec0::1]:8443/", "https://user@h.example/",
		"https://192.0.2.1/", "HTTPS://HOOKS.EXAMPLE.COM/", "https://[::ffff:8.8.8.8]/", "https://hooks.example.com:0/",
	} {
		f.Add(u)
	}
	policy := cloud.WebhookPolicy{}
	forms := []netip.Prefix{netip.MustParsePrefix("::/96"), netip.MustParsePrefix("::ffff:0:0:0/96"),
		netip.MustParsePrefix("64:ff9b::/96")}
	bad := func(a netip.Addr) bool {
		return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsMulticast() ||
			a.IsUnspecified() || a.IsInterfaceLocalMulticast()
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, mode := range []cloud.Mode{cloud.ModeLive, cloud.ModeTest} {
			if policy.CheckWebhookURL(mode, raw) != nil {
				continue
			}
			u, err := url.Parse(raw)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Fragment != "" || u.Host == "" {
				t.Fatalf("%s accepted %q", mode, raw)
			}
			host := strings.TrimSuffix(u.Hostname(), ".")
			a, err := netip.ParseAddr(host)
			if err != nil {
				labels := strings.Split(host, ".")
				if len(labels) < 2 || slices.Contains(labels, "") {
					t.Fatalf("%s accepted %q, whose host %q is no full domain name", mode, raw, host)
				}
				if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
					t.Fatalf("%s accepted %q, whose host ends in a number", mode, raw)
				}
				continue
			}
			a = a.Unmap()
			if bad(a) {
				t.Fatalf("%s accepted %q: %s", mode, raw, a)
			}
			b := a.As16()
			for _, p := range forms {
				if a.Is6() && p.Contains(a) && bad(netip.AddrFrom4([4]byte(b[12:]))) {
					t.Fatalf("%s accepted %q, which carries %s", mode, raw, netip.AddrFrom4([4]byte(b[12:])))
				}
			}
			if a.Is6() && netip.MustParsePrefix("2002::/16").Contains(a) && bad(netip.AddrFrom4([4]byte(b[2:6]))) {
				t.Fatalf("%s accepted the 6to4 %q", mode, raw)
			}
		}
	})
}
