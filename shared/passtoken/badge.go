package passtoken

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"time"
)

const (
	// BadgePrefix starts every walk-in badge token: a pass signed by a site
	// appliance's own key for a visitor who walked in, valid at that site
	// until the end of the local day. The digit is the version. A reader
	// tells it from a visit pass ([Prefix]) and a personal pass
	// ([PersonPrefix]) by these three bytes.
	BadgePrefix = "B1:"

	// BadgeLen is the length of every badge token: the payload has no
	// optional parts, so anything longer or shorter is ErrMalformed.
	BadgeLen = len(BadgePrefix) + (8*(badgeSize+ed25519.SignatureSize)+4)/5

	// MaxBadgeValidity bounds how long after its issue a badge may be
	// valid. A badge lasts until the end of its local day of issue: at
	// most a day and the longest daylight-saving shift (2 hours, in
	// Antarctica/Troll). Two days leaves room for any zone's oddity while
	// keeping a badge a day pass, whoever signed it.
	MaxBadgeValidity = 48 * time.Hour
)

// Layout of the badge payload; doc.go draws it.
const (
	offBadgeVisit  = keyIDSize
	offBadgeSite   = offBadgeVisit + uuidSize
	offBadgeIssued = offBadgeSite + uuidSize
	offBadgeUntil  = offBadgeIssued + 4
	badgeSize      = offBadgeUntil + 4
	badgeRawSize   = badgeSize + ed25519.SignatureSize
)

// BadgeClaims is what a walk-in badge asserts. Times are whole Unix
// seconds: SignBadge drops any fraction, and VerifyBadge returns them in
// UTC.
type BadgeClaims struct {
	VisitID  string    // TypeID "visit_..." of the walk-in's visit, made at the site
	SiteID   string    // TypeID "site_..." of the site whose appliance signed it
	IssuedAt time.Time // required
	// NotAfter is the last second the badge admits: the end of the local
	// day of issue at the site. At or after IssuedAt, and at most
	// MaxBadgeValidity after it.
	NotAfter time.Time
}

// BadgeKeyID is the ID a walk-in badge key goes by: the first 4 bytes of
// the SHA-256 of its public key, as 8 lower-case hex digits. Deriving it
// means the appliance's key file needs to hold only the key, and the
// cloud and the appliance cannot disagree on it. It returns an error
// wrapping ErrInvalidKey for a key that is not ed25519.PublicKeySize bytes.
func BadgeKeyID(pub ed25519.PublicKey) (string, error) {
	if len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("badge key ID: key has %d bytes, want %d: %w", len(pub), ed25519.PublicKeySize, ErrInvalidKey)
	}
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:keyIDSize]), nil
}

// BadgeKey returns the Key that signs walk-in badges with priv, under its
// BadgeKeyID. It returns an error wrapping ErrInvalidKey when priv is not
// ed25519.PrivateKeySize bytes.
func BadgeKey(priv ed25519.PrivateKey) (Key, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return Key{}, fmt.Errorf("badge key: private key has %d bytes, want %d: %w", len(priv), ed25519.PrivateKeySize, ErrInvalidKey)
	}
	pub, _ := priv.Public().(ed25519.PublicKey)
	id, err := BadgeKeyID(pub)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: id, Private: priv}, nil
}

// checkBadge holds the rules on a badge's times both SignBadge and
// VerifyBadge enforce.
func checkBadge(issued, until uint32) error {
	switch {
	case issued == 0:
		return fmt.Errorf("issued at is zero")
	case until < issued:
		return fmt.Errorf("not after %d is before issued at %d", until, issued)
	case time.Duration(until-issued)*time.Second > MaxBadgeValidity:
		return fmt.Errorf("not after is %ds after issued at, more than %s", until-issued, MaxBadgeValidity)
	}
	return nil
}

// SignBadge returns the walk-in badge token for c signed by k. It returns
// an error wrapping ErrInvalidKey when k is not a usable key and
// ErrInvalidClaims when c cannot be encoded: an ID that is not a TypeID
// of its prefix, a zero IssuedAt, a time outside 1970-01-01 00:00:01 to
// 2106-02-07 06:28:15 UTC, or NotAfter before IssuedAt or more than
// MaxBadgeValidity after it. The token depends only on k and c.
func SignBadge(k Key, c BadgeClaims) (string, error) {
	keyID, err := badgeFormat.signingKey(k)
	if err != nil {
		return "", err
	}
	visit, ok := parseTypeID(visitPrefix, c.VisitID)
	if !ok {
		return "", fmt.Errorf("sign badge: %w: visit ID %q is not a %s_ TypeID", ErrInvalidClaims, c.VisitID, visitPrefix)
	}
	site, ok := parseTypeID(sitePrefix, c.SiteID)
	if !ok {
		return "", fmt.Errorf("sign badge: %w: site ID %q is not a %s_ TypeID", ErrInvalidClaims, c.SiteID, sitePrefix)
	}
	if c.IssuedAt.IsZero() || c.NotAfter.IsZero() {
		return "", fmt.Errorf("sign badge: %w: issued at and not after are required", ErrInvalidClaims)
	}
	issued, err := unixSeconds("issued at", c.IssuedAt)
	if err != nil {
		return "", fmt.Errorf("sign badge: %w: %w", ErrInvalidClaims, err)
	}
	until, err := unixSeconds("not after", c.NotAfter)
	if err != nil {
		return "", fmt.Errorf("sign badge: %w: %w", ErrInvalidClaims, err)
	}
	if err := checkBadge(issued, until); err != nil {
		return "", fmt.Errorf("sign badge: %w: %w", ErrInvalidClaims, err)
	}

	var buf [len(BadgePrefix) + badgeRawSize]byte
	raw := buf[len(BadgePrefix):]
	copy(raw[offBadgeVisit:], visit[:])
	copy(raw[offBadgeSite:], site[:])
	binary.BigEndian.PutUint32(raw[offBadgeIssued:], issued)
	binary.BigEndian.PutUint32(raw[offBadgeUntil:], until)
	var text [BadgeLen]byte
	return badgeFormat.seal(buf[:], text[:], keyID, badgeSize, k.Private), nil
}

// VerifyBadge checks a walk-in badge token against keys and returns its
// claims. Like Verify it returns an error wrapping ErrMalformed,
// ErrUnknownKey or ErrBadSignature, checked in that order, never panics,
// and accepts exactly the text SignBadge writes. keys must hold only badge
// keys certified for the verifier's own site: the token's site is the
// caller's to compare, and whether it admits now (its day, the visit's
// state) is the caller's to judge.
func VerifyBadge(token string, keys KeySet) (BadgeClaims, error) {
	var buf [len(BadgePrefix) + badgeRawSize]byte
	raw, err := badgeFormat.decode(buf[:], token)
	if err != nil {
		return BadgeClaims{}, err
	}
	issued := binary.BigEndian.Uint32(raw[offBadgeIssued:])
	until := binary.BigEndian.Uint32(raw[offBadgeUntil:])
	if err := checkBadge(issued, until); err != nil {
		return BadgeClaims{}, fmt.Errorf("verify badge: %w: %w", ErrMalformed, err)
	}
	if err := badgeFormat.checkSignature(buf[:], raw, keys); err != nil {
		return BadgeClaims{}, err
	}
	var visit, site [uuidSize]byte
	copy(visit[:], raw[offBadgeVisit:])
	copy(site[:], raw[offBadgeSite:])
	// One string holds both IDs: the conversion copies once.
	var tmp [2 * typeIDSize]byte
	b := appendTypeID(tmp[:0], visitPrefix, &visit)
	visitEnd := len(b)
	ids := string(appendTypeID(b, sitePrefix, &site))
	return BadgeClaims{VisitID: ids[:visitEnd], SiteID: ids[visitEnd:], IssuedAt: fromUnix(issued), NotAfter: fromUnix(until)}, nil
}
