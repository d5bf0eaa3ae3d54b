// Package badgekey is the site appliance's own walk-in badge key: the
// Ed25519 key that signs the badges of visitors who walk in at the desk
// (shared/passtoken's "B1:" tokens), so a walk-in gets a badge that opens
// the site's gates while the cloud is out of reach. The cloud holds the
// organisation's pass-signing keys and never gives them out; it certifies
// this key's public half for the appliance's site alone (docs/decisions.md,
// "Offline walk-in badge passes (issue 16)").
//
// The key is made on the appliance's first start and kept in one file on
// its data partition beside the cache (FileName), apart from any other
// key, as edge/keyfile keeps keys: PEM of its PKCS #8 form, mode 0600,
// written whole or not at all. It is never replaced: every badge printed since depends on it, so a
// file that is there and unusable stops the appliance with a *FileError
// that names the file and what to do.
//
// It may import the standard library, edge/keyfile and shared/ packages;
// it knows nothing of the cache, so whoever signs badges (the edge's
// kiosk store) needs no bbolt to use it.
package badgekey

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/svc-vms/svc/shared/keyfile"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
)

// FileName is the key file's name, in the directory of the cache file.
const FileName = "badge-key.pem"

// ErrDamaged is returned, inside a *FileError, when the key file's content
// is not one Ed25519 private key in PEM: empty, truncated, another kind of
// key, or anything after it. It is keyfile.ErrDamaged.
var ErrDamaged = keyfile.ErrDamaged

// FileError is returned by Open when the key file is there and cannot be
// used: unreadable, open to other users, or damaged (ErrDamaged). The
// appliance stops rather than make a new key over it.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("badge key %s: %v. The appliance does not replace this file, since the walk-in badges it already "+
		"signed depend on it: fix its owner or mode (0600) if that is the problem, or restore it from a backup; failing that, "+
		"move it aside, revoke this edge in the cloud (svc-cloud edges revoke) and enrol the appliance again, which makes a new key",
		e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// Key is the appliance's badge key. It is immutable and safe for
// concurrent use.
type Key struct {
	key  passtoken.Key
	path string
}

// Open returns the badge key kept at path. When there is no file at path
// it makes a key from random (crypto/rand when nil) and writes it there
// first, durably, with mode 0600 (edge/keyfile): created is true then. A
// file at path that cannot be used is a *FileError, and the file is left
// as it is. Other errors are the file system's, from making a new file.
func Open(path string, random io.Reader) (k *Key, created bool, err error) {
	priv, created, err := keyfile.Open(path, random)
	var fe *keyfile.FileError
	if errors.As(err, &fe) {
		return nil, false, &FileError{Path: path, Err: fe.Err}
	}
	if err != nil {
		return nil, false, fmt.Errorf("badge key: %w", err)
	}
	pk, err := passtoken.BadgeKey(priv)
	if err != nil {
		return nil, false, &FileError{Path: path, Err: fmt.Errorf("%w: %w", ErrDamaged, err)}
	}
	return &Key{key: pk, path: path}, created, nil
}

// Path is the key file's path.
func (k *Key) Path() string { return k.path }

// ID is the key's ID (passtoken.BadgeKeyID), which every badge it signs
// names.
func (k *Key) ID() string { return k.key.ID }

// Public is the key's public half, which the edge sends in its status for
// the cloud to certify.
func (k *Key) Public() ed25519.PublicKey {
	return k.key.Public().Key
}

// Sign returns the badge token for the walk-in visit visitID at site
// siteID, issued at issued and valid until the end of that day in loc, the
// site's time zone. It returns an error for a nil loc and
// passtoken.SignBadge's errors (wrapping passtoken.ErrInvalidClaims for
// an ID that is not a visit_ or site_ TypeID, or a time outside the
// token's range).
func (k *Key) Sign(visitID, siteID string, issued time.Time, loc *time.Location) (string, error) {
	if loc == nil {
		return "", errors.New("sign badge: no time zone for the site's day")
	}
	until := passrule.EndOfDay(issued, loc).Truncate(time.Second)
	return passtoken.SignBadge(k.key, passtoken.BadgeClaims{VisitID: visitID, SiteID: siteID, IssuedAt: issued, NotAfter: until})
}
