package passrule

import (
	"errors"
	"strconv"
)

// Clock is a time of day, minutes after midnight, 0..1439. Its text form is
// "HH:MM", as the API writes daily hours.
type Clock int

// MaxClock is the last minute of a day, 23:59.
const MaxClock Clock = 24*60 - 1

// errClock is the one parse failure; callers report it against a field, so
// it does not repeat the input.
var errClock = errors.New("must be a time of day HH:MM from 00:00 to 23:59")

// ParseClock reads "HH:MM" with exactly two digits each, from 00:00 to 23:59.
// Anything else, including "7:00", "24:00" and surrounding spaces, is an
// error: a pass rule is written by software, and a lenient parser would let
// the cloud and an appliance read the same text differently.
func ParseClock(s string) (Clock, error) {
	if len(s) != 5 || s[2] != ':' {
		return 0, errClock
	}
	h, okH := twoDigits(s[0], s[1])
	m, okM := twoDigits(s[3], s[4])
	if !okH || !okM || h > 23 || m > 59 {
		return 0, errClock
	}
	return Clock(h*60 + m), nil
}

func twoDigits(a, b byte) (int, bool) {
	if a < '0' || a > '9' || b < '0' || b > '9' {
		return 0, false
	}
	return int(a-'0')*10 + int(b-'0'), true
}

// Valid reports whether c is a minute of the day, 00:00..23:59.
func (c Clock) Valid() bool { return c >= 0 && c <= MaxClock }

// String returns "HH:MM". A value out of range prints like an out-of-range
// time.Month, "%!Clock(1440)", so it is never mistaken for a time of day.
func (c Clock) String() string {
	if !c.Valid() {
		return "%!Clock(" + strconv.Itoa(int(c)) + ")"
	}
	h, m := int(c)/60, int(c)%60
	return string([]byte{byte('0' + h/10), byte('0' + h%10), ':', byte('0' + m/10), byte('0' + m%10)})
}

// MarshalText writes "HH:MM", so a Clock can sit in a JSON body or a wire
// message as the API spells it. It fails on a value out of range rather
// than send text ParseClock would refuse.
func (c Clock) MarshalText() ([]byte, error) {
	if !c.Valid() {
		return nil, errClock
	}
	return []byte(c.String()), nil
}

// UnmarshalText reads text as ParseClock does.
func (c *Clock) UnmarshalText(text []byte) error {
	v, err := ParseClock(string(text))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
