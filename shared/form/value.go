package form

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/svc-vms/svc/shared/contact"
	"github.com/svc-vms/svc/shared/ids"
)

// MaxSafeInteger is the largest magnitude of an integer answer or bound:
// 2^53−1, the largest every JSON reader (JavaScript's included) holds
// exactly.
const MaxSafeInteger int64 = 1<<53 - 1

// scalar is one value of a question's type: an answer, an enum value, a
// const or an x-svc-show-if equals.
type scalar struct {
	// key is equal for equal values: 1 and 1.0 are the same integer,
	// 100 and 1e2 the same number.
	key string
	// text is the value's normalised JSON.
	text json.RawMessage
	// display is how a message shows it: a string unquoted.
	display string
}

// check reads v, a value decoded with UseNumber, as an answer to q and
// checks it against everything but q's enum. It returns a message for the
// caller's FieldError when v does not fit.
func (q *question) check(v any) (scalar, string) {
	switch q.typ {
	case typeString:
		s, ok := v.(string)
		if !ok {
			return scalar{}, "must be a string"
		}
		if msg := q.checkString(s); msg != "" {
			return scalar{}, msg
		}
		return scalar{key: s, text: encodeString(s), display: s}, ""
	case typeBoolean:
		b, ok := v.(bool)
		if !ok {
			return scalar{}, "must be true or false"
		}
		t := strconv.FormatBool(b)
		return scalar{key: t, text: json.RawMessage(t), display: t}, ""
	case typeInteger:
		n, ok := v.(json.Number)
		if !ok {
			return scalar{}, "must be an integer"
		}
		i, whole, inRange := parseInteger(string(n))
		switch {
		case !whole:
			return scalar{}, "must be a whole number"
		case !inRange:
			return scalar{}, fmt.Sprintf("must be between %d and %d", -MaxSafeInteger, MaxSafeInteger)
		case q.minInt != nil && i < *q.minInt:
			return scalar{}, "must be at least " + q.minText
		case q.maxInt != nil && i > *q.maxInt:
			return scalar{}, "must be at most " + q.maxText
		}
		t := strconv.FormatInt(i, 10)
		return scalar{key: t, text: json.RawMessage(t), display: t}, ""
	case typeNumber:
		n, ok := v.(json.Number)
		if !ok {
			return scalar{}, "must be a number"
		}
		f, ok := parseNumber(string(n))
		switch {
		case !ok:
			return scalar{}, "is too large to be a number"
		case q.minNum != nil && f < *q.minNum:
			return scalar{}, "must be at least " + q.minText
		case q.maxNum != nil && f > *q.maxNum:
			return scalar{}, "must be at most " + q.maxText
		}
		return scalar{key: strconv.FormatFloat(f, 'g', -1, 64), text: json.RawMessage(n), display: string(n)}, ""
	}
	return scalar{}, "has a type this package does not know" // unreachable: Parse checks types
}

// checkString checks s against q's string constraints, enum aside.
func (q *question) checkString(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		// PostgreSQL can store U+0000 neither in text nor in jsonb.
		return "may not contain the NUL character (U+0000)"
	}
	if s == "" {
		return "may not be empty: send null for no answer"
	}
	switch q.xtype {
	case xPerson:
		if !ids.Valid(ids.Person, s) {
			return "must be a person ID (person_ followed by 26 characters)"
		}
		return ""
	case xPhone:
		if !contact.ValidPhone(s) {
			return "must be an E.164 number such as +442071838750"
		}
	}
	n := utf8.RuneCountInString(s)
	if n > q.maxLen {
		return fmt.Sprintf("must be at most %d characters", q.maxLen)
	}
	if n < q.minLen {
		return fmt.Sprintf("must be at least %d characters", q.minLen)
	}
	switch q.format {
	case formatEmail:
		if !contact.ValidEmail(s) {
			return "must be an email address such as ada@example.com"
		}
	case formatDate:
		if !validDate(s) {
			return "must be a date such as 2026-11-21"
		}
	case formatDateTime:
		if !validDateTime(s) {
			return "must be an RFC 3339 date-time such as 2026-11-21T09:00:00Z"
		}
	case formatURI:
		if !validURL(s) {
			return "must be an http or https URL such as https://example.com/"
		}
	}
	if q.pattern != nil && !q.pattern.MatchString(s) {
		return "must match the pattern " + q.pattern.String()
	}
	return ""
}

// validDate reports whether s is an RFC 3339 full-date (YYYY-MM-DD).
func validDate(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil && len(s) == len(time.DateOnly)
}

// validDateTime reports whether s is an RFC 3339 date-time with an offset.
func validDateTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// validURL reports whether s is an absolute http or https URL with a host
// and no user information. Other schemes (javascript:, data:) are refused
// because the console shows these answers as links.
func validURL(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
}

// parseInteger reads s, the text of a JSON number, as an integer. whole is
// false when s has a fractional part (1.5, 15e-1); inRange is false when
// the value exceeds ±MaxSafeInteger. It works on the digits, never on a
// float64 (1.0000000000000000001 is not whole) or a big number (1e999999999
// must not allocate).
func parseInteger(s string) (n int64, whole, inRange bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if !allDigits(intPart) || intPart == "" || !allDigits(frac) {
		return 0, false, false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	scale := -len(frac)
	trimmed := strings.TrimRight(digits, "0")
	scale += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		return 0, true, true // zero, whatever the exponent
	}
	if hasExp {
		expNeg := strings.HasPrefix(exp, "-")
		exp = strings.TrimLeft(strings.TrimLeft(exp, "+-"), "0")
		if !allDigits(exp) {
			return 0, false, false
		}
		if len(exp) > 9 { // beyond any digits a JSON text can hold
			if expNeg {
				return 0, false, false
			}
			return 0, true, false
		}
		e, _ := strconv.Atoi("0" + exp)
		if expNeg {
			e = -e
		}
		scale += e
	}
	if scale < 0 {
		return 0, false, false
	}
	if len(digits)+scale > 16 { // MaxSafeInteger has 16 digits
		return 0, true, false
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", scale), 10, 64)
	if err != nil || v > MaxSafeInteger {
		return 0, true, false
	}
	if neg {
		v = -v
	}
	return v, true, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseNumber reads s, the text of a JSON number, as a float64. ok is false
// when it overflows; a value too small to represent reads as zero, and -0
// as 0, so that equal numbers compare equal.
func parseNumber(s string) (f float64, ok bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false // not a number at all: never from a decoder
	}
	if math.IsInf(f, 0) {
		return 0, false
	}
	if f == 0 {
		f = 0
	}
	return f, true
}

// encodeString returns s as a JSON string, without the HTML escaping of
// json.Marshal: answers are data, not markup.
func encodeString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
