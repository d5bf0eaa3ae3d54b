// A short client flow run against a running svc-cloud with openapi-fetch
// and the types openapi-typescript generates from its served OpenAPI
// document (make clients generates ./api.ts, compiles this file with
// tsc --strict and runs it with Node). It creates a visit, checks it in,
// reads the visit.checked_in event narrowed by its type and reads two
// typed problems; it exits non-zero on any mismatch, so a change to the
// document that breaks a TypeScript client fails make test, whether
// at compile time or at run time.
//
// SVC_API_URL is the API's base URL (ending in /v1) and SVC_API_KEY a
// test-mode secret key.
import createClient from "openapi-fetch";
import type { components, paths } from "./api";

type Schemas = components["schemas"];

// Node's process, declared rather than typed by @types/node: this is
// all the flow uses of it.
declare const process: { env: Record<string, string | undefined>; exitCode?: number };

class Mismatch extends Error {}

function expect(ok: boolean, what: string, got: unknown): asserts ok {
  if (!ok) {
    throw new Mismatch(`${what}: got ${JSON.stringify(got)}`);
  }
}

async function flow(base: string, key: string): Promise<string> {
  const api = createClient<paths>({ baseUrl: base, headers: { Authorization: `Bearer ${key}` } });

  // A site and an active host of the demo organisation.
  const sites = await api.GET("/sites", { params: { query: { limit: 1 } } });
  expect(sites.data !== undefined && sites.data.data.length > 0, "list sites: want a site", sites.error ?? sites.data);
  const site: string = sites.data.data[0]!.id;
  const people = await api.GET("/people", { params: { query: { active: true, limit: 1 } } });
  expect(people.data !== undefined && people.data.data.length > 0, "list people: want an active person", people.error ?? people.data);
  const host: string = people.data.data[0]!.id;

  // Create a visit expected now, so that its pass admits it at once,
  // with only the fields it needs (the ones with a server default stay
  // optional). The same Idempotency-Key sent again gets the same visit.
  const body: Schemas["VisitCreate"] = {
    site_id: site,
    host_id: host,
    type: "meeting",
    visitor: { name: "Tessa Typescript" },
    expected_at: new Date().toISOString(),
  };
  const idem = crypto.randomUUID();
  const created = await api.POST("/visits", { params: { header: { "Idempotency-Key": idem } }, body });
  expect(created.response.status === 201 && created.data !== undefined, "create visit: want 201", created.error);
  const visit: Schemas["Visit"] = created.data;
  expect(visit.status === "expected" && visit.visitor.name === "Tessa Typescript" && visit.checked_in_at === null, "create visit", visit);
  const again = await api.POST("/visits", { params: { header: { "Idempotency-Key": idem } }, body });
  expect(again.data?.id === visit.id, `create visit again with the same Idempotency-Key: want visit ${visit.id}`, again.error ?? again.data);

  // Check it in (the body is optional).
  const checkIn = { params: { path: { visit_id: visit.id }, header: { "Idempotency-Key": crypto.randomUUID() } } };
  const checkedIn = await api.POST("/visits/{visit_id}/check-in", checkIn);
  expect(checkedIn.data?.status === "checked_in" && checkedIn.data.checked_in_at !== null, "check in: want checked_in", checkedIn.error ?? checkedIn.data);

  // Its visit.checked_in event: e.data is a Visit once e.type is known.
  const events = await api.GET("/events", { params: { query: { type: "visit.checked_in" } } });
  expect(events.data !== undefined, "list events: want 200", events.error);
  let found = false;
  for (const e of events.data.data) {
    switch (e.type) {
      case "visit.checked_in": {
        const v: Schemas["Visit"] = e.data;
        if (v.id === visit.id) {
          expect(v.status === "checked_in" && v.checked_in_at !== null, "the visit.checked_in event's data", v);
          found = true;
        }
        break;
      }
      default:
        throw new Mismatch(`list events of type visit.checked_in: got a ${e.type} event`);
    }
  }
  expect(found, `list events: the visit.checked_in event of ${visit.id}`, events.data.data.map((e) => e.id));

  // Checking in twice is a 409 problem, whose status and code are typed.
  const twice = await api.POST("/visits/{visit_id}/check-in", {
    params: { path: { visit_id: visit.id }, header: { "Idempotency-Key": crypto.randomUUID() } },
  });
  expect(twice.error !== undefined && twice.error.status === 409, "check in again: want 409", twice.error ?? twice.data);
  const conflict: Schemas["ConflictOrStateProblem"] = twice.error;
  expect(conflict.code === "invalid_state", "check in again: want invalid_state", conflict);

  // A visit that does not exist is a 404 problem.
  const missing = await api.GET("/visits/{visit_id}", { params: { path: { visit_id: "visit_00000000000000000000000000" } } });
  expect(missing.error !== undefined && missing.error.status === 404, "get a missing visit: want 404", missing.error ?? missing.data);
  const notFound: Schemas["NotFoundProblem"] = missing.error;
  const code: "not_found" = notFound.code;
  expect(code === "not_found" && notFound.request_id.length > 0, "get a missing visit: want not_found", notFound);

  // And the visit reads back as checked in.
  const got = await api.GET("/visits/{visit_id}", { params: { path: { visit_id: visit.id } } });
  expect(got.data?.status === "checked_in", "get visit: want checked_in", got.error ?? got.data);
  return `visit ${visit.id} created, checked in, its visit.checked_in event narrowed to a Visit; 409 ${conflict.code} and 404 ${code} read as typed problems`;
}

const base = process.env["SVC_API_URL"];
const key = process.env["SVC_API_KEY"];
if (!base || !key) {
  console.error("tsclient: SVC_API_URL and SVC_API_KEY must be set");
  process.exitCode = 2;
} else {
  try {
    console.log("tsclient: " + (await flow(base, key)));
  } catch (err) {
    console.error("tsclient:", err instanceof Error ? err.message : err);
    process.exitCode = 1;
  }
}
