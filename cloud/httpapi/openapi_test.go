package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/problem"
)

// openAPIBase is the path every operation of the document sits under: the
// document's server URL ends with it.
const openAPIBase = "/v1"

// openAPIContract is the document loaded, validated and routed once for
// every test of the package.
var openAPIContract = sync.OnceValues(func() (*openAPISpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPI)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, err
	}
	// Tests call servers on random ports: route on the path alone, with
	// the document's base path as its only server.
	doc.Servers = openapi3.Servers{{URL: openAPIBase}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &openAPISpec{doc: doc, router: router}, nil
})

type openAPISpec struct {
	doc    *openapi3.T
	router routers.Router
}

func loadOpenAPI(t testing.TB) *openAPISpec {
	t.Helper()
	spec, err := openAPIContract()
	require.NoError(t, err, "the OpenAPI document must load and validate")
	return spec
}

// validateResponse fails t unless resp (with its already-read body) is what
// the OpenAPI document says the operation returns: a documented status, its
// headers and its body schema. A request to no operation of the document
// must have been answered with a not_found problem.
func validateResponse(t testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	spec := loadOpenAPI(t)
	ctx := context.Background()

	// Route on the path and query alone; the document's server is the base
	// path.
	routed := req.Clone(ctx)
	routed.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	route, params, err := spec.router.FindRoute(routed)
	if err != nil {
		if item := spec.pathItem(routed); item != nil {
			requireMethodNotAllowed(t, spec, item, routed, status, header, body)
			return
		}
		requireUndocumentedRoute(t, spec, req, status, header, body)
		return
	}

	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: routed, PathParams: params, Route: route, Options: opts,
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: opts,
	}
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		t.Fatalf("%s %s: the %d response does not match the OpenAPI document (%s):\n%v\nheaders: %v\nbody: %s",
			req.Method, req.URL.RequestURI(), status, route.Operation.OperationID, err, header, body)
	}
}

// requireUndocumentedRoute checks the answer to a request for no operation
// of the document: a not_found problem.
func requireUndocumentedRoute(t testing.TB, spec *openAPISpec, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	if status != http.StatusNotFound || header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("%s %s is no operation of the OpenAPI document, yet the response is %d %s: %s",
			req.Method, req.URL.RequestURI(), status, header.Get("Content-Type"), body)
	}
	var v any
	require.NoError(t, json.Unmarshal(body, &v), "problem body: %s", body)
	schema := spec.doc.Components.Schemas["Problem"].Value
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		t.Fatalf("%s %s: the 404 body is not a Problem: %v\nbody: %s", req.Method, req.URL.RequestURI(), err, body)
	}
	require.Equal(t, string(problem.NotFound), v.(map[string]any)["code"], "body: %s", body)
}

// pathItem returns the document's path item req's path matches when req's
// method is not one of its operations, or nil.
func (s *openAPISpec) pathItem(req *http.Request) *openapi3.PathItem {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut, http.MethodHead} {
		other := req.Clone(req.Context())
		other.Method = m
		if route, _, err := s.router.FindRoute(other); err == nil {
			return route.PathItem
		}
	}
	return nil
}

// requireMethodNotAllowed checks the answer to a documented path asked
// with a method it does not have: the document's MethodNotAllowed
// response, whose Allow header names exactly the path's methods in the
// document.
func requireMethodNotAllowed(t testing.TB, spec *openAPISpec, item *openapi3.PathItem, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	name := req.Method + " " + req.URL.Path
	require.Equal(t, http.StatusMethodNotAllowed, status, "%s: a documented path asked with another method: %s", name, body)
	var methods []string
	for m := range item.Operations() {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	require.Equal(t, strings.Join(methods, ", "), header.Get("Allow"), "%s: Allow names the path's methods in the document", name)

	resp := spec.doc.Components.Responses["MethodNotAllowed"]
	require.NotNil(t, resp, "the document has a MethodNotAllowed response")
	for h, ref := range resp.Value.Headers {
		if ref.Value.Required {
			require.NotEmpty(t, header.Get(h), "%s: header %s", name, h)
		}
	}
	media := resp.Value.Content.Get(problem.ContentType)
	require.NotNil(t, media, "MethodNotAllowed is a problem")
	require.Equal(t, problem.ContentType, header.Get("Content-Type"), "%s", name)
	var v any
	require.NoError(t, json.Unmarshal(body, &v), "problem body: %s", body)
	if err := media.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		t.Fatalf("%s: the 405 body does not match MethodNotAllowed: %v\nbody: %s", name, err, body)
	}
}

// newOpenAPIServer is an API server on a fresh SQLite store.
func newOpenAPIServer(t *testing.T) (*httpapi.Server, *cloud.Service) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	svc := cloud.NewService(store, time.Now)
	srv, err := httpapi.New(ctx, httpapi.Config{Service: svc})
	require.NoError(t, err)
	return srv, svc
}

func TestOpenAPI_DocumentIsValid(t *testing.T) {
	spec := loadOpenAPI(t)
	doc := spec.doc
	require.Equal(t, "3.1.0", doc.OpenAPI)

	// Every operation the server routes is in the document, and the
	// document has no operation the server lacks.
	srv, _ := newOpenAPIServer(t)
	served := srv.Routes()
	require.NotEmpty(t, served)
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+openAPIBase+path)
		}
	}
	slices.Sort(documented)
	require.Equal(t, served, documented, "the operations in openapi.json must be exactly the routes in server.go")

	// The problem codes are shared/problem's, no more, no fewer.
	var codes []string
	for _, c := range problem.Codes() {
		codes = append(codes, string(c))
	}
	var enum []string
	for _, v := range doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		enum = append(enum, v.(string))
	}
	require.ElementsMatch(t, codes, enum, "Problem.code enumerates shared/problem.Codes()")

	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			require.NotEmpty(t, op.OperationID, name)
			// Another method on the path answers 405: every operation
			// shows it, as the path's other answers.
			require.NotNil(t, op.Responses.Status(http.StatusMethodNotAllowed), "%s documents 405", name)
			require.Equal(t, "#/components/responses/MethodNotAllowed", op.Responses.Status(http.StatusMethodNotAllowed).Ref, name)
			if path == "/openapi.json" || path == "/passes/{link}" || strings.HasPrefix(path, "/enrolments") {
				require.NotNil(t, op.Security, "%s needs no authentication", name)
				require.Empty(t, *op.Security, "%s needs no authentication", name)
				continue
			}
			if strings.HasPrefix(path, "/edge/") {
				// An appliance's own routes: signed with its identity key
				// (shared/edgeauth), never called with an API key.
				require.NotNil(t, op.Security, "%s is signed by an appliance", name)
				require.Equal(t, openapi3.SecurityRequirements{{"edgeSignature": []string{}}}, *op.Security, "%s is signed by an appliance", name)
				require.NotNil(t, op.Responses.Status(401), "%s documents 401", name)
				continue
			}
			scope, _ := op.Extensions["x-svc-scope"].(string)
			require.True(t, cloud.Scope(scope).Valid(), "%s: x-svc-scope %q is one of the scopes", name, scope)
			require.Contains(t, op.Description, "`"+scope+"`", "%s: the description names the scope", name)
			plan, _ := op.Extensions["x-svc-live-plan"].(string)
			require.True(t, cloud.Plan(plan).Valid(), "%s: x-svc-live-plan %q is a plan", name, plan)
			for _, status := range []int{401, 403, 429, 500} {
				require.NotNil(t, op.Responses.Status(status), "%s documents %d", name, status)
			}
			if method == http.MethodPost {
				p := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, "Idempotency-Key")
				require.NotNil(t, p, "%s takes Idempotency-Key", name)
				require.True(t, p.Required, "%s: Idempotency-Key is required", name)
			}
		}
	}
}

func TestOpenAPI_Served(t *testing.T) {
	srv, _ := newOpenAPIServer(t)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	req, err := http.NewRequest(http.MethodGet, ts.URL+"/v1/openapi.json", nil)
	require.NoError(t, err)
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "served without Authorization: %s", body)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"), resp.Header.Get("Content-Type"))
	require.Equal(t, httpapi.OpenAPI, body, "the served document is the embedded one, byte for byte")
	validateResponse(t, req, resp.StatusCode, resp.Header, body)
}

// Every path of the document, asked with a method it does not have,
// answers the document's 405 with Allow naming the path's methods
// (validateResponse holds the answer to the document).
func TestOpenAPI_WrongMethodAnswers405WithThePathsMethods(t *testing.T) {
	spec := loadOpenAPI(t)
	srv, _ := newOpenAPIServer(t)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	for path, item := range spec.doc.Paths.Map() {
		for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
			if item.GetOperation(method) != nil {
				continue
			}
			req, err := http.NewRequest(method, ts.URL+openAPIBase+param.ReplaceAllString(path, "x1"), nil)
			require.NoError(t, err)
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s: %s", method, path, body)
			validateResponse(t, req, resp.StatusCode, resp.Header, body)
		}
	}
}

// Every problem response names a schema: Problem, or one narrowing it to
// a status and codes with typed properties, so that generated clients get
// a named type with a typed code and status rather than an untyped value
// per response (oapi-codegen made interface{} of a narrowing without
// types).
func TestOpenAPI_ProblemResponsesAreNamedTypes(t *testing.T) {
	doc := loadOpenAPI(t).doc
	codes := doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum
	check := func(name string, resp *openapi3.ResponseRef) {
		t.Helper()
		media := resp.Value.Content.Get(problem.ContentType)
		if media == nil {
			return
		}
		ref := media.Schema.Ref
		require.Regexp(t, `^#/components/schemas/[A-Za-z]*Problem$`, ref, "%s: a problem response refers to a named schema", name)
		s := media.Schema.Value
		if ref == "#/components/schemas/Problem" {
			return
		}
		require.Len(t, s.AllOf, 2, "%s (%s): allOf Problem and its narrowing", name, ref)
		require.Equal(t, "#/components/schemas/Problem", s.AllOf[0].Ref, "%s (%s)", name, ref)
		n := s.AllOf[1].Value
		require.True(t, n.Type.Is(openapi3.TypeObject), "%s (%s): the narrowing is an object", name, ref)
		require.ElementsMatch(t, []string{"status", "code"}, n.Required, "%s (%s)", name, ref)
		status, code := n.Properties["status"].Value, n.Properties["code"].Value
		require.True(t, status.Type.Is(openapi3.TypeInteger), "%s (%s): status is an integer", name, ref)
		require.NotNil(t, status.Const, "%s (%s): one status", name, ref)
		require.True(t, code.Type.Is(openapi3.TypeString), "%s (%s): code is a string", name, ref)
		require.NotEmpty(t, code.Enum, "%s (%s)", name, ref)
		for _, c := range code.Enum {
			require.Contains(t, codes, c, "%s (%s): a code of Problem", name, ref)
			require.EqualValues(t, problem.Code(c.(string)).Status(), status.Const, "%s (%s): %s is sent with its status", name, ref, c)
		}
	}
	for name, resp := range doc.Components.Responses {
		check("components.responses."+name, resp)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				if resp.Ref == "" {
					check(method+" "+path+" "+status, resp)
				}
			}
		}
	}
}

// eventData is the schema each event type's data is, by type prefix or
// whole type (docs/decisions.md, "Events"); "" for the reserved types
// whose objects are not in the API yet.
var eventData = map[string]string{
	"visit.": "Visit", "pass.": "Visit", "watchlist.": "Visit", "booking.": "Booking", "person.": "Person",
	"attendance.punched": "AttendanceEvent", "timesheet.": "Timesheet", "visitor.erased": "ErasedVisitor",
	"webhook_endpoint.disabled": "WebhookEndpoint", "edge.": "Edge", "delivery.": "", "roll_call.": "",
}

func eventDataOf(t testing.TB, typ string) string {
	t.Helper()
	for k, v := range eventData {
		if k == typ || strings.HasSuffix(k, ".") && strings.HasPrefix(typ, k) {
			return v
		}
	}
	t.Fatalf("event type %s: which object does its data hold?", typ)
	return ""
}

// Event is a union keyed by type: every type of cloud.EventTypes maps to
// the one branch whose type enum holds it, and that branch's data is the
// object the type carries. The webhooks section has one delivery per type,
// its body that branch, with the Standard Webhooks headers.
func TestOpenAPI_EventsAreTyped(t *testing.T) {
	doc := loadOpenAPI(t).doc
	schemas := doc.Components.Schemas
	var enum []string
	for _, v := range schemas["EventType"].Value.Enum {
		enum = append(enum, v.(string))
	}
	require.Equal(t, cloud.EventTypes, enum, "EventType lists cloud.EventTypes")

	event := schemas["Event"].Value
	require.Equal(t, cloud.EventTypes, requireDiscriminated(t, event, "type"), "the discriminator maps every event type")
	branches := map[string][]string{} // ref → the types mapped to it
	for typ, m := range event.Discriminator.Mapping {
		branches[m.Ref] = append(branches[m.Ref], typ)
	}
	for _, b := range event.OneOf {
		types := branches[b.Ref]
		slices.Sort(types)
		require.ElementsMatch(t, schemas["Event"].Value.OneOf[0].Value.Required, b.Value.Required, "%s: the envelope's members are required", b.Ref)
		data := b.Value.Properties["data"]
		for _, typ := range types {
			want := eventDataOf(t, typ)
			if want == "" {
				require.Empty(t, data.Ref, "%s: %s is reserved", b.Ref, typ)
				continue
			}
			require.Equal(t, "#/components/schemas/"+want, data.Ref, "%s: the data of %s", b.Ref, typ)
		}
	}

	var hooks []string
	for name, item := range doc.Webhooks {
		hooks = append(hooks, name)
		op := item.Post
		require.NotNil(t, op, "webhook %s is a POST", name)
		require.Len(t, item.Operations(), 1, "webhook %s is a POST only", name)
		body := op.RequestBody.Value.Content.Get("application/json")
		require.NotNil(t, body, "webhook %s: a JSON body", name)
		require.Equal(t, event.Discriminator.Mapping[name].Ref, body.Schema.Ref, "webhook %s: the body is its event's branch", name)
		for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			p := op.Parameters.GetByInAndName(openapi3.ParameterInHeader, h)
			require.NotNil(t, p, "webhook %s: header %s", name, h)
			require.True(t, p.Required, "webhook %s: %s is required", name, h)
		}
	}
	slices.Sort(hooks)
	require.Equal(t, cloud.EventTypes, hooks, "one webhook per event type")
}

// validateDelivery fails t unless a webhook delivery, its headers and
// body, is what the document's webhooks section says is sent for its
// event's type.
func validateDelivery(t testing.TB, header http.Header, body []byte) {
	t.Helper()
	spec := loadOpenAPI(t)
	var e struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "delivery body: %s", body)
	item := spec.doc.Webhooks[e.Type]
	require.NotNil(t, item, "the document's webhooks has %s", e.Type)
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header = header.Clone()
	opts := &openapi3filter.Options{MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: req, Options: opts,
		Route: &routers.Route{Spec: spec.doc, Path: e.Type, PathItem: item, Method: http.MethodPost, Operation: item.Post}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		t.Fatalf("the %s delivery does not match the document's webhooks:\n%v\nheaders: %v\nbody: %s", e.Type, err, header, body)
	}
}

// What the API sends has no defaults: a field it always sends is required,
// and one it may leave out says when. openapi-typescript makes a property
// with a default non-optional, right for what the server sends only when
// the server does send it; request bodies keep their defaults and are
// generated with --default-non-nullable=false (make clients).
func TestOpenAPI_SentSchemasHaveNoDefaults(t *testing.T) {
	doc := loadOpenAPI(t).doc
	seen := map[*openapi3.Schema]bool{}
	var walk func(where string, s *openapi3.SchemaRef)
	walk = func(where string, s *openapi3.SchemaRef) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		seen[s.Value] = true
		if s.Ref != "" {
			where = s.Ref
		}
		v := s.Value
		for name, p := range v.Properties {
			require.Nil(t, p.Value.Default, "%s: %s is sent by the API, so it has no default: it is required, or says when it is absent", where, name)
			walk(where+"."+name, p)
		}
		walk(where+"[]", v.Items)
		if v.AdditionalProperties.Schema != nil {
			walk(where+"{}", v.AdditionalProperties.Schema)
		}
		for _, l := range []openapi3.SchemaRefs{v.AllOf, v.OneOf, v.AnyOf} {
			for _, s := range l {
				walk(where, s)
			}
		}
	}
	sent := func(where string, resp *openapi3.ResponseRef) {
		for _, media := range resp.Value.Content {
			walk(where, media.Schema)
		}
	}
	for name, resp := range doc.Components.Responses {
		sent("components.responses."+name, resp)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				sent(method+" "+path+" "+status, resp)
			}
		}
	}
	for name, item := range doc.Webhooks {
		for _, media := range item.Post.RequestBody.Value.Content {
			walk("webhook "+name, media.Schema)
		}
	}
	require.NotEmpty(t, seen)
}
