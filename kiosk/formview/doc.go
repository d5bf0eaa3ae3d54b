// Package formview renders a visit type's form for the reception kiosk and
// reads a submitted one back.
//
// The form is the cloud's: shared/form parses the JSON Schema with its
// x-svc annotations, says which questions are shown and required given the
// answers so far, and checks answers with the API's own words. This
// package only turns that into HTML (html/template, server-side) and HTML
// form values back into typed answers, so the desk and the API can never
// disagree about what a form means.
//
// # What the page embeds
//
// Render returns one <div class="svc-form" data-svc-form> to put inside the
// page's own <form method="post">, beside its CSRF token and its other
// fields. Controls are named FieldPrefix+key ("cf.company"), so they cannot
// clash with the page's own names; element IDs are "cf-"+key. The page
// should serve StylesheetFile and ScriptFile from Assets and link them
// (large touch targets; live show and hide). The form works without the
// script: questions that depend on answers appear when the server renders
// the form again after a submit (Result.Unseen says when).
//
// # Words
//
// The form's own texts (titles, descriptions, labels, units, consent text)
// come from the schema. The kiosk's words come from Options.T with the keys
// of MessageKeys. Problems with answers are shared/form's messages, the
// API's words ("must be at least 1").
//
// It may import the standard library and shared/ packages only; the kiosk
// imports it, never the other way round.
package formview
