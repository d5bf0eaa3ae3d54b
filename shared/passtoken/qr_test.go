package passtoken_test

import (
	"fmt"
	"github.com/svc-vms/svc/shared/zbartest"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/shared/passtoken"
)

// qrAlphanumeric is the QR alphanumeric character set (ISO/IEC 18004 §7.4.4).
const qrAlphanumeric = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:"

// claimsWithGates is worstClaims cut to n gates.
func claimsWithGates(tb testing.TB, n int) passtoken.Claims {
	tb.Helper()
	c := worstClaims(tb)
	c.GateIDs = c.GateIDs[:n]
	if n == 0 {
		c.GateIDs = nil
	}
	return c
}

func qrVersion(tb testing.TB, content string) int {
	tb.Helper()
	q, err := qrcode.New(content, qrcode.Medium)
	if err != nil {
		tb.Fatalf("qrcode.New(%d characters): %v", len(content), err)
	}
	return q.VersionNumber
}

// TestToken_QRSize checks the size budget. A token's QR version depends on
// its content as well as its length: runs of base32 digits (2-7) can go in
// cheaper numeric segments. The worst case for a length is therefore letters
// only, one alphanumeric segment, and that is what must fit version 10-M.
func TestToken_QRSize(t *testing.T) {
	k := newKey(t, 1)
	for n := 0; n <= passtoken.MaxGates; n++ {
		tok := signT(t, k, claimsWithGates(t, n))
		if i := strings.IndexFunc(tok, func(r rune) bool { return !strings.ContainsRune(qrAlphanumeric, r) }); i >= 0 {
			t.Fatalf("%d gates: character %q at %d is not QR alphanumeric", n, tok[i], i)
		}
		worst := passtoken.Prefix + strings.Repeat("A", len(tok)-len(passtoken.Prefix))
		v, vWorst := qrVersion(t, tok), qrVersion(t, worst)
		// The same length in lower case can only be byte mode; a smaller
		// version shows the encoder chose alphanumeric.
		vByte := qrVersion(t, strings.ToLower(worst))
		t.Logf("%d gates: %d characters, QR version %d-M at worst (%d-M for this token, %d-M in byte mode)", n, len(tok), vWorst, v, vByte)
		if vWorst > 10 {
			t.Errorf("%d gates: QR version %d at error correction M, want at most 10", n, vWorst)
		}
		if v > vWorst {
			t.Errorf("%d gates: the token needs version %d, more than letters only (%d)", n, v, vWorst)
		}
		if vWorst >= vByte {
			t.Errorf("%d gates: QR version %d is not smaller than byte mode's %d: not alphanumeric", n, vWorst, vByte)
		}
	}
	// Fresh random IDs, as the cloud will sign them.
	c := worstClaims(t)
	for range 100 {
		c.VisitID, c.SiteID = randomID(t, "visit"), randomID(t, "site")
		for i := range c.GateIDs {
			c.GateIDs[i] = randomID(t, "gate")
		}
		if tok := signT(t, k, c); qrVersion(t, tok) > 10 {
			t.Fatalf("QR version %d for %s", qrVersion(t, tok), tok)
		}
	}
}

// TestToken_Zbarimg shows that a common reader gives back the exact token
// from the PNG the cloud will send.
func TestToken_Zbarimg(t *testing.T) {
	k := newKey(t, 1)
	for _, n := range []int{0, passtoken.MaxGates} {
		t.Run(fmt.Sprintf("%d gates", n), func(t *testing.T) {
			tok := signT(t, k, claimsWithGates(t, n))
			png, err := qrcode.Encode(tok, qrcode.Medium, 256)
			if err != nil {
				t.Fatalf("qrcode.Encode: %v", err)
			}
			if got := zbartest.Read(t, png); got != tok {
				t.Errorf("zbarimg read\n%q\nwant\n%q", got, tok)
			}
		})
	}
}
