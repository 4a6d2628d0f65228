// Behaviour of the packed @strata/webhooks: API, routing order, errors,
// middleware answers over real HTTP (Node and web), size limit, timeout,
// and the relay client against a local server-sent-events endpoint.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import {
  Webhooks,
  createEventHandler,
  createNodeMiddleware,
  createWebMiddleware,
  createRelayClient,
  emitterEventNames,
  validateEventName,
} from "@strata/webhooks";
import * as webhooksModule from "@strata/webhooks";
import { emitterEventNames as upstreamNames } from "@octokit/webhooks";
import { deliver, serveNode, serveWeb } from "./helpers.mjs";

const SECRET = "mySecret";
const payload = JSON.stringify({ action: "opened", issue: { number: 1 } });

test("emitterEventNames: @octokit/webhooks 14.2.0's 323 names, name for name", () => {
  assert.equal(emitterEventNames.length, 323);
  assert.deepEqual([...emitterEventNames], [...upstreamNames]);
  assert.ok(Object.isFrozen(emitterEventNames));
  for (const name of ["issue_dependencies", "issue_dependencies.blocked_by_added", "issue_dependencies.blocked_by_removed",
    "issue_dependencies.blocking_added", "issue_dependencies.blocking_removed", "secret_scanning_alert.assigned",
    "secret_scanning_alert.unassigned", "repository_dispatch.sample.collected", "issues.opened", "push"]) {
    assert.ok(emitterEventNames.includes(name), name);
  }
});

test("validateEventName", () => {
  assert.doesNotThrow(() => validateEventName("issues.opened"));
  assert.doesNotThrow(() => validateEventName("issue_dependencies.blocked_by_added"));
  assert.doesNotThrow(() => validateEventName("secret_scanning_alert.unassigned"));
  assert.throws(() => validateEventName("*"), { name: "TypeError", message: /Please use the Webhooks.onAny\(\) method instead/ });
  assert.throws(() => validateEventName("error"), { name: "TypeError", message: /Please use the Webhooks.onError\(\) method instead/ });
  assert.throws(() => validateEventName("nope"), { name: "TypeError", message: '"nope" is not a known webhook name (https://developer.github.com/v3/activity/events/types/)' });
  assert.doesNotThrow(() => validateEventName("nope", { onUnknownEventName: "ignore" }));
  const warnings = [];
  validateEventName("nope", { onUnknownEventName: "warn", log: { warn: (message) => warnings.push(message) } });
  assert.equal(warnings.length, 1);
  assert.throws(() => validateEventName(1), { name: "TypeError", message: "eventName must be of type string" });
});

test("on() takes the names @octokit/webhooks 14.2.0 added without a warning; the spec's old spelling warns", () => {
  const warnings = [];
  const webhooks = new Webhooks({ secret: SECRET, log: { warn: (message) => warnings.push(message) } });
  webhooks.on("issue_dependencies.blocked_by_added", () => {});
  webhooks.on(["secret_scanning_alert.assigned", "secret_scanning_alert.unassigned", "repository_dispatch.sample.collected"], () => {});
  assert.deepEqual(warnings, []);
  webhooks.on("repository_dispatch.sample", () => {});
  assert.deepEqual(warnings, ['"repository_dispatch.sample" is not a known webhook name (https://developer.github.com/v3/activity/events/types/)']);
});

test("receive runs name.action, name, then * handlers, with the event", async () => {
  const webhooks = new Webhooks({ secret: SECRET });
  const order = [];
  webhooks.onAny(() => order.push("*"));
  webhooks.on("issues", () => order.push("issues"));
  webhooks.on("issues.opened", () => order.push("issues.opened"));
  webhooks.on("issues.closed", () => order.push("issues.closed"));
  await webhooks.receive({ id: "1", name: "issues", payload: JSON.parse(payload) });
  assert.deepEqual(order, ["issues.opened", "issues", "*"]);
});

test("removeListener removes the most recent registration only", async () => {
  const handler = createEventHandler({});
  let calls = 0;
  const count = () => calls++;
  handler.on("push", count);
  handler.on("push", count);
  handler.removeListener("push", count);
  await handler.receive({ id: "1", name: "push", payload: {} });
  assert.equal(calls, 1);
});

test("handler errors reject receive with every error and reach onError", async () => {
  const webhooks = new Webhooks({ secret: SECRET });
  const seen = [];
  webhooks.on("push", () => {
    throw new Error("one");
  });
  webhooks.on("push", async () => {
    throw Object.assign(new Error("two"), { status: 418 });
  });
  webhooks.onError((error) => seen.push(error));
  await assert.rejects(webhooks.receive({ id: "1", name: "push", payload: {} }), (error) => {
    assert.equal(error.message, "one\ntwo");
    assert.equal(error.errors.length, 2);
    assert.equal(error.event.id, "1");
    return true;
  });
  assert.equal(seen.length, 1);
});

test("transform runs before handlers", async () => {
  const webhooks = new Webhooks({ secret: SECRET, transform: (event) => ({ ...event, extra: 1 }) });
  let received;
  webhooks.on("push", (event) => (received = event));
  await webhooks.receive({ id: "1", name: "push", payload: {} });
  assert.equal(received.extra, 1);
});

test("verifyAndReceive refuses a bad signature with status 400 and emits error", async () => {
  const webhooks = new Webhooks({ secret: SECRET, additionalSecrets: ["old"] });
  const errors = [];
  webhooks.onError((error) => errors.push(error));
  await assert.rejects(webhooks.verifyAndReceive({ id: "1", name: "issues", payload, signature: "sha256=00" }), (error) => {
    assert.equal(error.errors[0].status, 400);
    return true;
  });
  assert.equal(errors.length, 1);
  const fromOldSecret = await new Webhooks({ secret: "old" }).sign(payload);
  await webhooks.verifyAndReceive({ id: "2", name: "issues", payload, signature: fromOldSecret });
});

test("the constructor needs a secret", () => {
  assert.throws(() => new Webhooks({}), { message: "[@strata/webhooks] options.secret required" });
});

for (const [target, serve, create] of [["Node", serveNode, createNodeMiddleware], ["web", serveWeb, createWebMiddleware]]) {
  test(`${target} middleware: every answer`, async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on("issues.opened", (event) => {
      if (event.payload.issue.number === 2) throw Object.assign(new Error("handler failed"), { status: 503 });
    });
    const server = await serve(create(webhooks, { path: "/hooks/" }));
    const url = `${server.url}/hooks`;
    const signature = await webhooks.sign(payload);
    try {
      let response = await deliver(url, { event: "issues", signature, body: payload });
      assert.deepEqual([response.status, await response.text()], [200, "ok\n"]);
      assert.equal(response.headers.get("content-type"), "text/plain");

      response = await deliver(`${server.url}/hooks///`, { event: "issues", signature, body: payload });
      assert.equal(response.status, 200);

      response = await deliver(url, { event: "issues", signature, body: payload, headers: { "content-type": "text/plain" } });
      assert.deepEqual([response.status, await response.json()], [415, { error: 'Unsupported "Content-Type" header value. Must be "application/json"' }]);

      response = await fetch(url, { method: "POST", headers: { "content-type": "application/json; charset=utf-8", "x-github-event": "issues" }, body: payload });
      assert.deepEqual([response.status, await response.json()], [400, { error: "Required headers missing: x-hub-signature-256, x-github-delivery" }]);

      response = await fetch(url, { method: "GET" });
      assert.deepEqual([response.status, await response.json()], [404, { error: "Unknown route: GET /hooks" }]);

      response = await deliver(url, { event: "issues", signature: await webhooks.sign("{"), body: "{" });
      assert.deepEqual([response.status, await response.json()], [400, { error: "SyntaxError: Invalid JSON" }]);

      const failing = JSON.stringify({ action: "opened", issue: { number: 2 } });
      response = await deliver(url, { event: "issues", signature: await webhooks.sign(failing), body: failing });
      assert.deepEqual([response.status, await response.json()], [503, { error: "Error: handler failed" }]);

      response = await deliver(`${server.url}/elsewhere`, { event: "issues", signature, body: payload });
      if (target === "Node") assert.deepEqual([response.status, await response.text()], [404, "not ours"]);
      else assert.deepEqual([response.status, await response.text()], [200, ""]);
    } finally {
      await server.close();
    }
  });

  test(`${target} middleware: bodies over the limit get 413 before any hashing`, async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    let verified = 0;
    const original = webhooks.verifyAndReceive;
    webhooks.verifyAndReceive = (event) => {
      verified++;
      return original(event);
    };
    const server = await serve(create(webhooks, { maxPayloadBytes: 1000 }));
    try {
      const big = JSON.stringify({ data: "x".repeat(2000) });
      let response = await deliver(`${server.url}/api/github/webhooks`, { event: "push", signature: await webhooks.sign(big), body: big });
      assert.deepEqual([response.status, await response.json()], [413, { error: "Payload too large: the limit is 1000 bytes" }]);
      // Without a content-length (chunked): refused while reading.
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(big));
          controller.close();
        },
      });
      response = await fetch(`${server.url}/api/github/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": "1", "x-hub-signature-256": await webhooks.sign(big) },
        body: stream,
        duplex: "half",
      });
      assert.equal(response.status, 413);
      assert.equal(verified, 0);
    } finally {
      await server.close();
    }
  });

  test(`${target} middleware: answers 202 when handlers outlast the timeout`, async () => {
    const webhooks = new Webhooks({ secret: SECRET });
    webhooks.on("push", () => new Promise((resolve) => setTimeout(resolve, 300)));
    const server = await serve(create(webhooks, { timeout: 50 }));
    try {
      const body = JSON.stringify({ ref: "x" });
      const response = await deliver(`${server.url}/api/github/webhooks`, { event: "push", signature: await webhooks.sign(body), body });
      assert.deepEqual([response.status, await response.text()], [202, "still processing\n"]);
    } finally {
      await server.close();
    }
  });
}

test("the Node middleware calls next() for other paths", async () => {
  const middleware = createNodeMiddleware(new Webhooks({ secret: SECRET }));
  let nextCalled = false;
  const handled = await middleware({ url: "/other", method: "GET", headers: {} }, {}, () => (nextCalled = true));
  assert.equal(handled, false);
  assert.equal(nextCalled, true);
});

test("an unparsable URL gets 422", async () => {
  const middleware = createWebMiddleware(new Webhooks({ secret: SECRET }));
  const response = await middleware({ url: "http://[::1", method: "POST", headers: new Headers() });
  assert.deepEqual([response.status, await response.json()], [422, { error: "Request URL could not be parsed: http://[::1" }]);
});

test("relay client: signed deliveries from a server-sent-events channel are verified and dispatched", async () => {
  // Node 20 has no global EventSource: the eventsource package stands in.
  const EventSourceClass = globalThis.EventSource || (await import("eventsource")).EventSource;
  const webhooks = new Webhooks({ secret: SECRET });
  const received = [];
  webhooks.on("issues.opened", (event) => received.push(event.id));
  const errors = [];
  webhooks.onError((error) => errors.push(error.message));
  const signed = await webhooks.sign(payload);
  const messages = [
    { "x-request-id": "relay-1", "x-github-event": "issues", "x-hub-signature-256": signed, body: JSON.parse(payload) },
    { "x-request-id": "relay-2", "x-github-event": "issues", "x-hub-signature-256": "sha256=bad", body: JSON.parse(payload) },
  ];
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.write(": ready\n\n");
    for (const message of messages) response.write(`data: ${JSON.stringify(message)}\n\n`);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const relay = createRelayClient(webhooks, { url: `http://127.0.0.1:${server.address().port}/channel`, EventSource: EventSourceClass, log: { warn() {}, error() {} } });
  await relay.ready;
  for (let i = 0; i < 50 && received.length + errors.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  relay.close();
  server.closeAllConnections();
  server.close();
  assert.deepEqual(received, ["relay-1"]);
  assert.equal(errors.length, 1);
});

test("a Rust panic becomes a thrown Error, and verification and routing keep working", async () => {
  const webhooks = new Webhooks({ secret: SECRET });
  const seen = [];
  webhooks.on("issues.opened", (event) => seen.push(event.id));
  assert.equal("__testPanic" in webhooksModule, false, "no test-only export");
  // The package's hook, registered only because test/hooks.mjs was preloaded.
  const hooks = globalThis[Symbol.for("strata.testHooks")].filter((hook) => hook.name === "@strata/webhooks");
  assert.equal(hooks.length, 1);
  assert.throws(() => hooks[0].panic("boom"), /^Error: \[strata\] internal error in strata_test_panic: .*boom/s);
  await webhooks.verifyAndReceive({ id: "after-panic", name: "issues", payload, signature: await webhooks.sign(payload) });
  assert.deepEqual(seen, ["after-panic"]);
  assert.throws(() => validateEventName("*"), TypeError);
});
