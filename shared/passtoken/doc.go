// Package passtoken signs and verifies the tokens QR passes hold, so that a
// site appliance can check a pass offline: a visitor's pass ([Sign],
// [Verify]), even for a visit it has never received, an employee's
// personal pass ([SignPerson], [VerifyPerson]), which clocks them in and
// out, and a walk-in badge an appliance signed itself ([SignBadge],
// [VerifyBadge]).
//
// It may import only the standard library.
//
// # Keys
//
// Each organisation signs its passes with an Ed25519 [Key]. A key has a short
// ID, 4 random bytes written as 8 lower-case hex digits, that the token
// carries so a verifier can pick the public key. Rotation is a [KeySet] that
// holds the current public key and the retired ones still honoured; removing a
// retired key from the set turns its tokens into [ErrUnknownKey].
//
// # Format, version 1
//
// A token is the text "P1:" ([Prefix]) followed by RFC 4648 base32 of
// payload‖signature: upper case, no padding, and the unused low bits of the
// last character zero. Every character is in the QR alphanumeric set, so QR
// encoders use alphanumeric mode (5.5 bits a character instead of 8). There is
// no version byte in the payload: the prefix is the version, and it is signed.
//
// The payload, big-endian, 54+16·n bytes for n gates:
//
//	offset size
//	     0    4  key ID
//	     4   16  visit ID (the UUID inside the TypeID visit_…)
//	    20   16  site ID (UUID of site_…)
//	    36    4  issued at, Unix seconds, never 0
//	    40    4  not before, Unix seconds; 0 = no lower bound
//	    44    4  not after, Unix seconds; 0 = no upper bound
//	    48    2  daily from, minutes after midnight 0..1439; 0xFFFF = no daily hours
//	    50    2  daily until, same; both are 0xFFFF or neither, and from ≠ until
//	    52    1  flags: bit 0 single use; the other bits are 0
//	    53    1  n, the number of gates, 0..MaxGates
//	    54 16·n  gate IDs (UUIDs of gate_…), no duplicates, in the signer's order
//
// The 64-byte Ed25519 signature follows and covers the prefix text and the
// payload ("P1:"‖payload). Verify accepts exactly what Sign produces: any
// other length, a trailing byte, a lower-case letter, padding, whitespace,
// non-zero trailing bits, a reserved flag, a daily value out of range or a
// not-before after the not-after is [ErrMalformed], so a token has exactly one
// accepted text form.
//
// Gates are kept whole (16 bytes) rather than cut to the random half of their
// UUIDv7: Claims from Verify then give back real gate IDs that mean the same
// on the cloud and at the gate, at the cost of a lower [MaxGates]. With
// MaxGates gates a token is [MaxLen] characters and fits a QR code of version
// 10 at error correction M.
//
// Verify checks the signature and the form of a token, not whether it admits
// now: the validity window, daily hours, gates and single use are for the
// pass-rule decision, which also knows the visit's state and revocations.
//
// # Personal passes, version 1
//
// An employee's own pass is the text "E1:" ([PersonPrefix]) followed by base32
// of payload‖signature exactly as above, signed by the same organisation keys.
// The payload, big-endian, always 24 bytes, so a token is always [PersonLen]
// (144) characters and fits a QR code of version 6 at error correction M:
//
//	offset size
//	     0    4  key ID
//	     4   16  person ID (the UUID inside the TypeID person_…)
//	    20    4  issued at, Unix seconds, never 0
//
// The signature covers "E1:"‖payload, so neither kind of token can be read as
// the other: [Verify] refuses an "E1:" token and [VerifyPerson] a "P1:" one,
// both as [ErrMalformed], and a signature made over one prefix never holds
// under the other. A personal pass names no site, gates or validity: it
// admits its holder at every site of the organisation for as long as the
// person is active and the pass is their current one. The issue time is what
// tells the current pass from a replaced one: the person's record holds the
// issue time of their one current pass, and reissuing a pass moves it on.
// The token depends only on the key and the claims, so the same pass can be
// shown again without storing it.
//
// # Walk-in badges, version 1
//
// A visitor who walks in at a site's desk while the site cannot reach the
// cloud gets a badge signed by the site appliance's own Ed25519 key, not
// an organisation key (the cloud never hands those out). The token is the
// text "B1:" ([BadgePrefix]) followed by base32 of payload‖signature as
// above. The payload, big-endian, always 44 bytes, so a token is always
// [BadgeLen] (176) characters and fits a QR code of version 7 at error
// correction M:
//
//	offset size
//	     0    4  key ID ([BadgeKeyID]: SHA-256 of the public key, first 4 bytes)
//	     4   16  visit ID (UUID of visit_…)
//	    20   16  site ID (UUID of site_…)
//	    36    4  issued at, Unix seconds, never 0
//	    40    4  not after, Unix seconds: the end of the local day of issue;
//	             at or after issued at, at most MaxBadgeValidity after it
//
// The signature covers "B1:"‖payload, so a badge is read as no other kind
// of token and no other kind as a badge ([VerifyBadge] refuses them as
// [ErrMalformed]). Badge keys and organisation keys are kept in separate
// KeySets by their verifiers: a badge key never verifies a visit or
// personal pass, and an organisation key never a badge.
package passtoken
