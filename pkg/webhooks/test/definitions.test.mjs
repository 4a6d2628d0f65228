// Every webhook definition of GitHub's OpenAPI description
// (@octokit/openapi-webhooks, the version @octokit/webhooks pins, api.github.com)
// delivered once: a payload is built from the definition's JSON schema (the
// required properties, the first allowed value of each enum), signed, and
// delivered over real HTTP to the Node and the web middleware; each must reach
// exactly `event.action`, `event` and `*`. This covers the events
// @octokit/webhooks-examples has no example of (issue_dependencies.*,
// secret_scanning_alert.assigned/unassigned, ...), which examples.test.mjs
// cannot. Also: emitterEventNames is the definitions' names, name for name.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import { Webhooks, createNodeMiddleware, createWebMiddleware, emitterEventNames } from "@strata/webhooks";
import { sign } from "@strata/webhooks-methods";
import { deliver, serveNode, serveWeb } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const description = require("@octokit/openapi-webhooks/generated/api.github.com.json");
const examples = require("@octokit/webhooks-examples/api.github.com/index.json");
const SECRET = "strata definitions secret";

/** The object `#/components/...` names. */
function resolveRef(ref) {
  assert.ok(ref.startsWith("#/"), ref);
  return ref.slice(2).split("/").reduce((node, part) => node[part.replaceAll("~1", "/").replaceAll("~0", "~")], description);
}

/** A minimal value valid for `schema`: required properties only, first enum value. */
export function instanceOf(schema, depth = 0) {
  if (depth > 40) throw new Error("schema nests deeper than 40 levels");
  if (schema.$ref) return instanceOf(resolveRef(schema.$ref), depth + 1);
  if (schema.allOf) {
    const parts = schema.allOf.map((part) => instanceOf(part, depth + 1));
    return parts.every((part) => part && typeof part === "object" && !Array.isArray(part)) ? Object.assign({}, ...parts) : parts.at(-1);
  }
  if (schema.oneOf || schema.anyOf) {
    const branches = schema.oneOf || schema.anyOf;
    const branch = branches.find((candidate) => candidate.type !== "null") ?? branches[0];
    return instanceOf(branch, depth + 1);
  }
  if ("const" in schema) return schema.const;
  if (schema.enum) return schema.enum.find((value) => value !== null) ?? null;
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== "null") ?? "null") : schema.type;
  switch (type ?? (schema.properties ? "object" : undefined)) {
    case "object": {
      const value = {};
      for (const name of schema.required ?? []) {
        const property = schema.properties?.[name];
        value[name] = property ? instanceOf(property, depth + 1) : {};
      }
      return value;
    }
    case "array":
      return [];
    case "string":
      return schema.format === "date-time" ? "2026-01-01T00:00:00Z" : schema.format === "uri" ? "https://example.com/" : "text";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    case "null":
      return null;
    default:
      return {};
  }
}

/** Each definition: its listener name, event, action and a built payload. */
function deliveries() {
  return Object.entries(description.webhooks).map(([key, item]) => {
    const operation = item.post;
    const name = operation.operationId.replaceAll("-", "_").replace("/", ".");
    const [event, ...rest] = name.split(".");
    const schema = operation.requestBody.content["application/json"].schema;
    const payload = instanceOf(schema);
    // repository_dispatch's action is the dispatch's free-form event_type:
    // the definition's name (sample.collected) stands in for it.
    const actionSchema = (schema.$ref ? resolveRef(schema.$ref) : schema).properties?.action;
    if (rest.length && actionSchema && !actionSchema.enum && !("const" in actionSchema)) payload.action = rest.join(".");
    return { key, name, event, action: rest.join(".") || undefined, payload };
  });
}

test("emitterEventNames is the OpenAPI description's names, name for name, in upstream's order", async () => {
  const { emitterEventNames: upstream } = await import("@octokit/webhooks");
  const names = new Set();
  for (const { name, event } of deliveries()) names.add(event).add(name);
  assert.deepEqual([...emitterEventNames], [...names].sort());
  assert.deepEqual([...emitterEventNames], [...upstream]);
  assert.equal(emitterEventNames.length, 323);
  const upstreamManifest = JSON.parse(readFileSync(new URL("../node_modules/@octokit/webhooks/package.json", import.meta.url), "utf8"));
  assert.equal(upstreamManifest.version, "14.2.0");
});

test("every built payload carries its definition's action", () => {
  const all = deliveries();
  assert.equal(all.length, 261);
  for (const { key, action, payload } of all) assert.equal(payload.action, action, key);
  const withoutExample = all.filter(({ event, action }) => {
    const group = examples.find((candidate) => candidate.name === event);
    return !group || (action && !group.examples.some((example) => example.action === action));
  });
  // The 7 names @octokit/webhooks 14.2.0 added are among those without an example.
  for (const name of ["issue_dependencies.blocked_by_added", "issue_dependencies.blocked_by_removed", "issue_dependencies.blocking_added",
    "issue_dependencies.blocking_removed", "secret_scanning_alert.assigned", "secret_scanning_alert.unassigned"]) {
    assert.ok(withoutExample.some((delivery) => delivery.name === name), name);
  }
});

for (const [target, serve, create] of [["Node", serveNode, createNodeMiddleware], ["web", serveWeb, createWebMiddleware]]) {
  test(`every definition's delivery reaches exactly its handlers through the ${target} middleware`, async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    const seen = [];
    webhooks.onAny((event) => seen.push(`*:${event.id}`));
    for (const name of emitterEventNames) webhooks.on(name, (event) => seen.push(`${name}:${event.id}`));
    // The refused deliveries' errors, which the middleware logs.
    const logged = [];
    const log = { debug() {}, info() {}, warn: (message) => logged.push(`warn ${message}`), error: (error) => logged.push(String(error.message ?? error)) };
    const server = await serve(create(webhooks, { log }));
    let delivered = 0;
    try {
      for (const { key, name, event, action, payload } of deliveries()) {
        const body = JSON.stringify(payload);
        seen.length = 0;
        const response = await deliver(`${server.url}/api/github/webhooks`, { event, id: key, signature: await sign(SECRET, body), body });
        assert.equal(response.status, 200, `${key}: ${await response.clone().text()}`);
        assert.equal(await response.text(), "ok\n");
        assert.deepEqual(seen, action ? [`${name}:${key}`, `${event}:${key}`, `*:${key}`] : [`${event}:${key}`, `*:${key}`], key);
        // The same body under a wrong signature reaches nobody.
        seen.length = 0;
        const refused = await deliver(`${server.url}/api/github/webhooks`, { event, id: key, signature: await sign("wrong", body), body });
        assert.equal(refused.status, 400, key);
        await refused.text();
        assert.deepEqual(seen, [], key);
        delivered++;
      }
    } finally {
      await server.close();
    }
    assert.equal(delivered, 261);
    assert.equal(logged.length, 261);
    assert.ok(logged.every((message) => message === "[@strata/webhooks] signature does not match event payload and secret"), logged[0]);
  });
}

test("verifyAndReceive dispatches the new issue_dependencies and secret_scanning_alert actions", async () => {
  const webhooks = new Webhooks({ secret: SECRET });
  const seen = [];
  for (const name of ["issue_dependencies.blocked_by_added", "issue_dependencies.blocked_by_removed", "issue_dependencies.blocking_added",
    "issue_dependencies.blocking_removed", "secret_scanning_alert.assigned", "secret_scanning_alert.unassigned"]) {
    webhooks.on(name, (event) => seen.push(`${name}:${event.payload.action}`));
  }
  const fresh = deliveries().filter(({ name }) => /^issue_dependencies\.|^secret_scanning_alert\.(un)?assigned$/.test(name));
  assert.equal(fresh.length, 6);
  for (const { key, event, payload } of fresh) {
    const body = JSON.stringify(payload);
    await webhooks.verifyAndReceive({ id: key, name: event, payload: body, signature: await webhooks.sign(body) });
  }
  assert.deepEqual(seen, [
    "issue_dependencies.blocked_by_added:blocked_by_added",
    "issue_dependencies.blocked_by_removed:blocked_by_removed",
    "issue_dependencies.blocking_added:blocking_added",
    "issue_dependencies.blocking_removed:blocking_removed",
    "secret_scanning_alert.assigned:assigned",
    "secret_scanning_alert.unassigned:unassigned",
  ]);
});
