// A short client flow written against the types openapi-typescript
// generates from the OpenAPI document (make clients generates ./api.ts
// from the served document beside a copy of this file and compiles both
// with tsc --strict). It is never run (run.ts is): it fails to compile
// when the document stops giving a TypeScript client what this code
// needs, which is the check.
import type { components, paths, webhooks } from "./api";

type Schemas = components["schemas"];
type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
type ProblemOf<T> = T extends { content: { "application/problem+json": infer B } } ? B : never;

type CreateVisit = paths["/visits"]["post"];
type GetVisit = paths["/visits/{visit_id}"]["get"];
type ListEvents = paths["/events"]["get"];

// The transport is the caller's (fetch, axios, ...): declared, not built.
declare function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;

// Creating a visit sends only what the visit needs: fields with a server
// default (send_pass, walk_in, pass_rules ...) stay optional.
async function createVisit(siteId: string, hostId: string): Promise<Schemas["Visit"]> {
  const body: NonNullable<CreateVisit["requestBody"]>["content"]["application/json"] = {
    site_id: siteId,
    host_id: hostId,
    type: "meeting",
    visitor: { name: "Vera Visitor", phone: "+447700900123" },
    expected_at: "2026-11-22T10:00:00Z",
  };
  const r = await call("POST", "/v1/visits", body);
  if (r.status !== 201) {
    throw new Error(problemCode(r.body as ProblemOf<CreateVisit["responses"][422]>));
  }
  return r.body as Json<CreateVisit["responses"][201]>;
}

// Reading a visit: every field the API always sends is present in the
// type (nullable ones may be null, never undefined).
async function readVisit(id: string): Promise<string> {
  const r = await call("GET", "/v1/visits/" + id);
  if (r.status === 404) {
    const p: ProblemOf<GetVisit["responses"][404]> = r.body as Schemas["NotFoundProblem"];
    const code: "not_found" = p.code;
    const status: 404 = p.status;
    return `${code} ${status} ${p.request_id}`;
  }
  const v = r.body as Json<GetVisit["responses"][200]>;
  const checkedInAt: string | null = v.checked_in_at;
  const hostId: string | null = v.host_id;
  const plate: string | null | undefined = v.vehicle_plate; // the one field that may be absent
  const answers: Record<string, unknown> = v.custom_fields;
  return [v.id, v.status, v.visitor.name ?? "(erased)", checkedInAt ?? "", hostId ?? "", plate ?? "", Object.keys(answers).length].join(" ");
}

// An event's data is typed by its type; types a client does not know
// (new ones may appear) fall to the default.
function describe(e: Schemas["Event"]): string {
  switch (e.type) {
    case "visit.checked_in":
    case "visit.checked_out": {
      const v: Schemas["Visit"] = e.data;
      return `${v.visitor.name ?? "(erased)"} is ${v.status} at ${v.site_id}`;
    }
    case "booking.created":
      return `booking ${e.data.id} is ${e.data.status}`;
    case "person.deactivated":
      return `${e.data.name} left`;
    case "visitor.erased":
      return `visitor ${e.data.id} erased at ${e.data.erased_at}`;
    case "webhook_endpoint.disabled":
      return `endpoint ${e.data.url} disabled`;
    case "edge.offline":
      return `edge ${e.data.name} went ${e.data.state}`;
    default:
      return e.type;
  }
}

async function latestEvents(): Promise<string[]> {
  const r = await call("GET", "/v1/events?limit=10");
  const page = r.body as Json<ListEvents["responses"][200]>;
  return page.data.map(describe);
}

// An audit event's detail is typed by its action.
function overridden(a: Schemas["AuditEvent"]): string | undefined {
  if (a.action === "visit.pass_rules_overridden") {
    return `${a.detail.reason} overridden for ${a.detail.pass_visit_id}`;
  }
  return undefined;
}

// A form's questions, in screen order, with how each is asked.
function questions(f: Schemas["Form"]): string[] {
  return f.schema["x-svc-order"].map((key) => {
    const q: Schemas["FormQuestion"] | undefined = f.schema.properties[key];
    return `${key}: ${q?.type ?? "?"} ${q?.title ?? ""}`;
  });
}

// A problem's code is what clients branch on; codes a client does not
// know are handled by their status.
function problemCode(p: Schemas["Problem"]): string {
  switch (p.code) {
    case "validation_failed":
      return (p.errors ?? []).map((e) => `${e.location}: ${e.message}`).join("; ");
    case "method_not_allowed":
      return "wrong method";
    default:
      return `${p.code} (${p.status})`;
  }
}

// A webhook receiver: the body of a visit.checked_in delivery is the
// event, and its Standard Webhooks headers are typed.
type CheckedIn = webhooks["visit.checked_in"]["post"];
function received(headers: CheckedIn["parameters"]["header"], body: CheckedIn["requestBody"]["content"]["application/json"]): string {
  const signatures: string[] = headers["webhook-signature"].split(" ");
  if (body.id !== headers["webhook-id"] || signatures.length === 0) {
    return "not this event";
  }
  return `${body.data.visitor.name ?? "(erased)"} checked in at ${headers["webhook-timestamp"]}`;
}

export { createVisit, readVisit, latestEvents, overridden, questions, received };
