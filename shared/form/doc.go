// Package form reads the form of a visit type: a JSON Schema describing the
// custom fields asked about a visit, checks answers against it, and derives
// what may be shown to whom.
//
// It is shared (below shared/) because two sides read forms: the cloud
// checks custom_fields with it, and the site's kiosk renders the same form
// and checks a walk-in's answers with the same rules and the same words
// (DESIGN.md, "Kiosk"). Like every shared package it may import only the
// standard library and other shared/ packages (today shared/ids and shared/contact), never
// cloud, edge or kiosk. It knows nothing of tenants, storage, HTTP or
// HTML: the caller adds body.custom_fields. to a FieldError's Field and
// checks that the person IDs of PersonRefs exist in the tenant.
//
// # The schema subset
//
// A form is a strict subset of JSON Schema draft 2020-12. Parse refuses
// anything outside it, naming the JSON pointer of the first problem, so a
// schema either means exactly what this package does with it or is refused.
// The top level is an object with
//
//   - "type": "object" (required)
//   - "properties" (required): the questions, keyed by ^[a-z][a-z0-9_]{0,39}$
//   - "x-svc-order" (required): every question key exactly once, in screen order
//   - "required": question keys, unique
//   - "allOf": items {"if": {"properties": {k: {"const": v}, ...},
//     "required": [k, ...]}, "then": {"required": [k, ...]}}; the if lists
//     the same keys in properties and required
//   - "title", "description", "$schema" (only the draft 2020-12 URI) and
//     "additionalProperties" (only false: other keys are always refused)
//
// A question has "type" (string, boolean, integer or number), optional
// "title" and "description", "enum" (unique values of the question's type)
// and, by type: maxLength (1 to 10000, 2000 when absent), minLength, pattern
// (Go regexp syntax, unanchored like JSON Schema) and format (email, date,
// date-time, uri) for strings; minimum and maximum for integers and numbers.
// Integers are whole numbers within ±(2^53−1), what every JSON reader holds
// exactly.
//
// # Annotations
//
//   - x-svc-type: how the console and kiosk ask the question. person (a
//     string holding a person ID; never asked of the visitor), phone (an E.164
//     string), text, long_text, signature, photo (strings), choice (any type,
//     needs enum), yes_no (boolean), consent (boolean, needs
//     x-svc-consent-text). Absent: derived from type.
//   - x-svc-labels: display labels of enum values (or of true and false for a
//     boolean), keyed by the value's JSON text.
//   - x-svc-unit: unit of an integer or number ("parcels").
//   - x-svc-consent-text: the text a boolean question asks agreement to.
//   - x-svc-show-if: {"field": k, "equals": v}: show the question only when
//     the earlier question k is answered v. A screen hint: not enforced.
//   - x-svc-sites: site IDs; the question is asked only at these sites.
//   - x-svc-visitor: true when the visitor answers it: part of the public
//     form served to publishable keys.
//   - x-svc-sensitive: true for answers that must not leave the console
//     (health, religion, documents): omitted for API keys, connected apps,
//     events and webhooks.
//   - x-svc-masked: true for answers the console shows masked (document
//     numbers); omitted from the API exactly like sensitive ones.
//
// # Answers
//
// Validate checks an answer object and returns every problem, one per key,
// sorted by key. Null means no answer and is not stored; an empty string is
// refused, so "no answer" has one spelling, as for every nullable field of
// the API. Required questions (required, allOf) and x-svc-show-if are not
// enforced: the spec has required questions asked at check-in or when the
// visitor completes pre-registration. With Options.Public, a staff-only
// question gets the same words as a key the form does not have, so the
// public API does not reveal the rest of the form.
//
// # At the desk
//
// The kiosk asks required questions, so it needs what the API leaves out.
// Questions returns each question as a screen asks it (texts, labels,
// unit, bounds, conditions); Visible says which are shown now given the
// answers so far (x-svc-sites, x-svc-show-if); Missing lists the required
// questions shown and unanswered (required, and allOf items whose if
// holds on the answers shown); ValidateAtDesk drops the answers of hidden
// questions and adds Missing to Validate, so the desk and the API refuse
// an answer with the same words.
//
// Redact is what every API response, event and webhook shows: it leaves out
// sensitive and masked answers, and answers to keys the form no longer has.
package form
