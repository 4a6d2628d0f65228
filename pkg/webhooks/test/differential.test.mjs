// The web middleware against @octokit/webhooks' on arbitrary requests
// (fast-check): method, path, content type, which delivery headers are there,
// a right, wrong or malformed signature, valid or invalid JSON. Status and
// body must be upstream's (with the package names in messages swapped).
import { test } from "node:test";
import assert from "node:assert/strict";

import fc from "fast-check";
import * as upstream from "@octokit/webhooks";
import * as ours from "@strata/webhooks";

const SECRET = "differential secret";
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function middlewareOf(api) {
  const webhooks = new api.Webhooks({ secret: SECRET, log: quiet });
  webhooks.on("issues.opened", () => {});
  webhooks.onError(() => {});
  return api.createWebMiddleware(webhooks, { log: quiet });
}

const request = fc.record({
  method: fc.constantFrom("POST", "POST", "POST", "GET", "PUT"),
  path: fc.constantFrom("/api/github/webhooks", "/api/github/webhooks/", "/api/github/webhooks//", "/api/github/webhooks?x=1", "/other", "/api/github"),
  contentType: fc.constantFrom(undefined, "application/json", "application/json; charset=utf-8", "  application/json  ;x", "text/plain", "application/jsonx", "APPLICATION/JSON", ""),
  event: fc.constantFrom(undefined, "issues", "push", "", "nope"),
  delivery: fc.constantFrom(undefined, "1", ""),
  signature: fc.constantFrom(undefined, "right", "wrong", "truncated", "prefixless", "upper", ""),
  body: fc.oneof(
    fc.constant('{"action":"opened","issue":{"number":1}}'),
    fc.constant("{not json"),
    fc.json({ maxDepth: 2 }),
  ),
});

async function signatureFor(kind, body) {
  const right = await new ours.Webhooks({ secret: SECRET }).sign(body);
  switch (kind) {
    case "right":
      return right;
    case "wrong":
      return await new ours.Webhooks({ secret: "other" }).sign(body);
    case "truncated":
      return right.slice(0, 30);
    case "prefixless":
      return right.slice(7);
    case "upper":
      return right.toUpperCase();
    default:
      return kind;
  }
}

async function answer(middleware, spec, signature) {
  const headers = new Headers();
  if (spec.contentType !== undefined) headers.set("content-type", spec.contentType);
  if (spec.event !== undefined) headers.set("x-github-event", spec.event);
  if (spec.delivery !== undefined) headers.set("x-github-delivery", spec.delivery);
  if (signature !== undefined) headers.set("x-hub-signature-256", signature);
  const withBody = spec.method !== "GET";
  const response = await middleware(new Request(`http://localhost${spec.path}`, { method: spec.method, headers, body: withBody ? spec.body : undefined }));
  const text = await response.text();
  return { status: response.status, body: text.replaceAll("@strata/", "@octokit/") };
}

test("the web middleware answers arbitrary requests exactly like @octokit/webhooks' (fast-check)", async () => {
  const mine = middlewareOf(ours);
  const theirs = middlewareOf(upstream);
  let compared = 0;
  await fc.assert(
    fc.asyncProperty(request, async (spec) => {
      const signature = spec.signature === undefined ? undefined : await signatureFor(spec.signature, spec.body);
      assert.deepStrictEqual(await answer(mine, spec, signature), await answer(theirs, spec, signature), JSON.stringify({ ...spec, signature }));
      compared++;
    }),
    { numRuns: 600, seed: 20261122 },
  );
  assert.equal(compared >= 600, true);
});
