// Package contact checks a visitor's name and contact details with the
// API's rules and messages, for the cloud's POST /visits and the
// reception kiosk's walk-ins alike, so a phone number refused by one is
// refused by the other in the same words.
//
// It may import only the standard library.
package contact

import (
	"fmt"
	"net/mail"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a visitor's fields.
const (
	MaxNameLen  = 200 // characters of a name or company
	MaxEmailLen = 254 // bytes of an email address
)

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)

// ValidPhone reports whether s is an E.164 number.
func ValidPhone(s string) bool { return e164.MatchString(s) }

// ValidEmail reports whether s is a bare email address.
func ValidEmail(s string) bool {
	if len(s) > MaxEmailLen || strings.ContainsAny(s, " <>\"") {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// CheckText returns the problem with a text field, or "": blank when
// required, longer than max characters, or holding control characters.
func CheckText(s string, required bool, max int) string {
	switch {
	case required && strings.TrimSpace(s) == "":
		return "is required and may not be blank"
	case utf8.RuneCountInString(s) > max:
		return fmt.Sprintf("must be at most %d characters", max)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "may not contain control characters"
	}
	return ""
}

// Problem is one field's problem; Field is as the API names it
// (visitor.phone).
type Problem struct {
	Field   string
	Message string
}

// Visitor is a visitor's name and contact details as given.
type Visitor struct {
	Name, Email, Phone, Company string
}

// Check returns the problems with v, in field order: a name is required;
// phone (E.164), email and company are optional.
func (v Visitor) Check() []Problem {
	var out []Problem
	add := func(field, msg string) {
		if msg != "" {
			out = append(out, Problem{Field: field, Message: msg})
		}
	}
	add("visitor.name", CheckText(v.Name, true, MaxNameLen))
	if v.Phone != "" && !ValidPhone(v.Phone) {
		add("visitor.phone", "must be an E.164 number such as +447700900123")
	}
	if v.Email != "" && !ValidEmail(v.Email) {
		add("visitor.email", "must be an email address")
	}
	add("visitor.company", CheckText(v.Company, false, MaxNameLen))
	return out
}
