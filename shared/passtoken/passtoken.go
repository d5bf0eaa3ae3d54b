package passtoken

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

const (
	// Prefix starts every token of this format; the digit is the version.
	// A reader can tell a pass from other QR content by it.
	Prefix = "P1:"

	// MaxGates is the most gates one token can name. Four whole gate IDs
	// keep a token within a version 10 QR code at error correction M; a pass
	// rule for more gates cannot be signed, so the cloud refuses it up front.
	MaxGates = 4

	// MaxLen is the length of the longest token, one naming MaxGates gates.
	// Anything longer is ErrMalformed before any decoding.
	MaxLen = len(Prefix) + (8*(headerSize+MaxGates*uuidSize+ed25519.SignatureSize)+4)/5
)

// Layout of the payload; doc.go draws it.
const (
	uuidSize   = 16
	offVisit   = keyIDSize
	offSite    = offVisit + uuidSize
	offIssued  = offSite + uuidSize
	offFrom    = offIssued + 4
	offUntil   = offFrom + 4
	offDaily   = offUntil + 4
	offFlags   = offDaily + 4
	offGates   = offFlags + 1
	headerSize = offGates + 1

	maxRawSize = headerSize + MaxGates*uuidSize + ed25519.SignatureSize

	noDaily        = 0xFFFF
	minutesPerDay  = 24 * 60
	flagSingleUse  = 1 << 0
	reservedFlags  = ^byte(flagSingleUse)
	visitPrefix    = "visit"
	sitePrefix     = "site"
	gatePrefix     = "gate"
	typeIDSize     = len(visitPrefix) + 1 + typeIDSuffixLen // longest of the three
	gateTypeIDSize = len(gatePrefix) + 1 + typeIDSuffixLen
)

// Claims is what a pass asserts. Times are whole Unix seconds: Sign drops
// any fraction, and Verify returns them in UTC.
type Claims struct {
	VisitID   string    // TypeID "visit_..." of the visit that holds the pass
	SiteID    string    // TypeID "site_..."
	GateIDs   []string  // TypeIDs "gate_..."; empty = every gate at the site; at most MaxGates, none twice, order kept
	NotBefore time.Time // expected_at minus window.before; zero = no lower bound (walk-in)
	NotAfter  time.Time // expected_until plus window.after; zero = no upper bound
	Daily     *Daily    // nil = any time of day
	SingleUse bool
	IssuedAt  time.Time // required
}

// Daily is the time of day a pass admits, in minutes after midnight
// (0..1439) of the site's local time: [From, Until), spanning midnight when
// Until < From. From equal to Until would admit never or always, so it is
// refused rather than guessed.
type Daily struct{ From, Until int }

// payload is Claims in the token's binary form, all but the key ID at its
// start, which is the shared steps' (seal.go); check holds the rules both
// Sign and Verify enforce, so Verify accepts exactly what Sign can write.
type payload struct {
	visit, site      [uuidSize]byte
	issued, from, to uint32
	dailyFrom        uint16
	dailyUntil       uint16
	flags            byte
	nGates           int
	gates            [MaxGates][uuidSize]byte
}

func (p *payload) check() error {
	if p.issued == 0 {
		return errors.New("issued at is zero")
	}
	if p.from != 0 && p.to != 0 && p.from > p.to {
		return fmt.Errorf("not before %d is after not after %d", p.from, p.to)
	}
	if p.dailyFrom != noDaily || p.dailyUntil != noDaily {
		if p.dailyFrom >= minutesPerDay || p.dailyUntil >= minutesPerDay {
			return fmt.Errorf("daily %d..%d outside 0..%d", p.dailyFrom, p.dailyUntil, minutesPerDay-1)
		}
		if p.dailyFrom == p.dailyUntil {
			return fmt.Errorf("daily from equals until (%d)", p.dailyFrom)
		}
	}
	if p.flags&reservedFlags != 0 {
		return fmt.Errorf("reserved flags %#02x", p.flags&reservedFlags)
	}
	if p.nGates > MaxGates {
		return fmt.Errorf("%d gates, at most %d", p.nGates, MaxGates)
	}
	for i := 1; i < p.nGates; i++ {
		for j := range i {
			if p.gates[i] == p.gates[j] {
				return fmt.Errorf("gate %d repeats gate %d", i, j)
			}
		}
	}
	return nil
}

func (p *payload) size() int { return headerSize + p.nGates*uuidSize }

// marshal writes p into b at its offsets, after the key ID.
func (p *payload) marshal(b []byte) {
	copy(b[offVisit:], p.visit[:])
	copy(b[offSite:], p.site[:])
	binary.BigEndian.PutUint32(b[offIssued:], p.issued)
	binary.BigEndian.PutUint32(b[offFrom:], p.from)
	binary.BigEndian.PutUint32(b[offUntil:], p.to)
	binary.BigEndian.PutUint16(b[offDaily:], p.dailyFrom)
	binary.BigEndian.PutUint16(b[offDaily+2:], p.dailyUntil)
	b[offFlags] = p.flags
	b[offGates] = byte(p.nGates)
	for i := range p.nGates {
		copy(b[headerSize+i*uuidSize:], p.gates[i][:])
	}
}

// unmarshal reads a payload from b, which must be exactly its size.
func (p *payload) unmarshal(b []byte) bool {
	if len(b) < headerSize {
		return false
	}
	p.nGates = int(b[offGates])
	if p.nGates > MaxGates || len(b) != p.size() {
		return false
	}
	copy(p.visit[:], b[offVisit:])
	copy(p.site[:], b[offSite:])
	p.issued = binary.BigEndian.Uint32(b[offIssued:])
	p.from = binary.BigEndian.Uint32(b[offFrom:])
	p.to = binary.BigEndian.Uint32(b[offUntil:])
	p.dailyFrom = binary.BigEndian.Uint16(b[offDaily:])
	p.dailyUntil = binary.BigEndian.Uint16(b[offDaily+2:])
	p.flags = b[offFlags]
	for i := range p.nGates {
		copy(p.gates[i][:], b[headerSize+i*uuidSize:])
	}
	return true
}

// Sign returns the token for c signed by k. It returns an error wrapping
// ErrInvalidKey when k is not a usable key and ErrInvalidClaims when c cannot
// be encoded (see ErrInvalidClaims for the rules).
func Sign(k Key, c Claims) (string, error) {
	keyID, err := passFormat.signingKey(k)
	if err != nil {
		return "", err
	}
	p, err := fromClaims(c)
	if err != nil {
		return "", fmt.Errorf("sign pass: %w: %w", ErrInvalidClaims, err)
	}
	var buf [len(Prefix) + maxRawSize]byte
	p.marshal(buf[len(Prefix):])
	var text [MaxLen]byte
	return passFormat.seal(buf[:], text[:], keyID, p.size(), k.Private), nil
}

// fromClaims converts and checks c; its errors say which field is wrong.
func fromClaims(c Claims) (payload, error) {
	var p payload
	var ok bool
	if p.visit, ok = parseTypeID(visitPrefix, c.VisitID); !ok {
		return p, fmt.Errorf("visit ID %q is not a %s_ TypeID", c.VisitID, visitPrefix)
	}
	if p.site, ok = parseTypeID(sitePrefix, c.SiteID); !ok {
		return p, fmt.Errorf("site ID %q is not a %s_ TypeID", c.SiteID, sitePrefix)
	}
	if len(c.GateIDs) > MaxGates {
		return p, fmt.Errorf("%d gates, at most %d", len(c.GateIDs), MaxGates)
	}
	p.nGates = len(c.GateIDs)
	for i, g := range c.GateIDs {
		if p.gates[i], ok = parseTypeID(gatePrefix, g); !ok {
			return p, fmt.Errorf("gate ID %q is not a %s_ TypeID", g, gatePrefix)
		}
	}
	var err error
	if c.IssuedAt.IsZero() {
		return p, fmt.Errorf("issued at is zero")
	}
	if p.issued, err = unixSeconds("issued at", c.IssuedAt); err != nil {
		return p, err
	}
	if p.from, err = unixSeconds("not before", c.NotBefore); err != nil {
		return p, err
	}
	if p.to, err = unixSeconds("not after", c.NotAfter); err != nil {
		return p, err
	}
	p.dailyFrom, p.dailyUntil = noDaily, noDaily
	if d := c.Daily; d != nil {
		if d.From < 0 || d.From >= minutesPerDay || d.Until < 0 || d.Until >= minutesPerDay {
			return p, fmt.Errorf("daily %d..%d outside 0..%d", d.From, d.Until, minutesPerDay-1)
		}
		p.dailyFrom, p.dailyUntil = uint16(d.From), uint16(d.Until)
	}
	if c.SingleUse {
		p.flags |= flagSingleUse
	}
	return p, p.check()
}

// unixSeconds encodes t in whole seconds; the zero time is 0, unbounded.
func unixSeconds(field string, t time.Time) (uint32, error) {
	if t.IsZero() {
		return 0, nil
	}
	s := t.Unix()
	if s < 1 || s > math.MaxUint32 {
		return 0, fmt.Errorf("%s %s is outside %s..%s", field, t.UTC().Format(time.RFC3339),
			time.Unix(1, 0).UTC().Format(time.RFC3339), time.Unix(math.MaxUint32, 0).UTC().Format(time.RFC3339))
	}
	return uint32(s), nil
}

// Verify checks token against keys and returns its claims. It returns an
// error wrapping ErrMalformed, ErrUnknownKey or ErrBadSignature, checked in
// that order, and never panics. The token must be exact: a reader's trailing
// CR or LF is the caller's to strip. Verify does not judge whether the pass
// admits now; that is the pass-rule decision's.
func Verify(token string, keys KeySet) (Claims, error) {
	var buf [len(Prefix) + maxRawSize]byte
	raw, err := passFormat.decode(buf[:], token)
	if err != nil {
		return Claims{}, err
	}
	var p payload
	if !p.unmarshal(raw) {
		return Claims{}, fmt.Errorf("verify pass: %d bytes do not match the gate count: %w", len(raw)+ed25519.SignatureSize, ErrMalformed)
	}
	if err := p.check(); err != nil {
		return Claims{}, fmt.Errorf("verify pass: %w: %w", ErrMalformed, err)
	}
	if err := passFormat.checkSignature(buf[:], raw, keys); err != nil {
		return Claims{}, err
	}
	return p.claims(), nil
}

// claims turns a checked payload back into Claims. All IDs share one string
// so that a verify costs few allocations.
func (p *payload) claims() Claims {
	var sb strings.Builder
	sb.Grow(len(visitPrefix) + len(sitePrefix) + 2 + 2*typeIDSuffixLen + p.nGates*gateTypeIDSize)
	var tmp [typeIDSize]byte
	sb.Write(appendTypeID(tmp[:0], visitPrefix, &p.visit))
	visitEnd := sb.Len()
	sb.Write(appendTypeID(tmp[:0], sitePrefix, &p.site))
	siteEnd := sb.Len()
	for i := range p.nGates {
		sb.Write(appendTypeID(tmp[:0], gatePrefix, &p.gates[i]))
	}
	all := sb.String()

	c := Claims{
		VisitID:   all[:visitEnd],
		SiteID:    all[visitEnd:siteEnd],
		NotBefore: fromUnix(p.from),
		NotAfter:  fromUnix(p.to),
		SingleUse: p.flags&flagSingleUse != 0,
		IssuedAt:  fromUnix(p.issued),
	}
	if p.nGates > 0 {
		c.GateIDs = make([]string, p.nGates)
		for i := range c.GateIDs {
			start := siteEnd + i*gateTypeIDSize
			c.GateIDs[i] = all[start : start+gateTypeIDSize]
		}
	}
	if p.dailyFrom != noDaily {
		c.Daily = &Daily{From: int(p.dailyFrom), Until: int(p.dailyUntil)}
	}
	return c
}

func fromUnix(s uint32) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(int64(s), 0).UTC()
}
