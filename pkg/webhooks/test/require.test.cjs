const { test } = require("node:test");
const assert = require("node:assert/strict");

test("require() gives the whole API, and the internals subpath", async () => {
  const api = require("@strata/webhooks");
  for (const name of ["Webhooks", "createEventHandler", "createNodeMiddleware", "createWebMiddleware", "validateEventName", "createRelayClient"]) {
    assert.equal(typeof api[name], "function", name);
  }
  assert.equal(api.emitterEventNames.length, 323);
  assert.ok(api.emitterEventNames.includes("issue_dependencies.blocking_removed"));
  const webhooks = new api.Webhooks({ secret: "s" });
  let seen;
  webhooks.on("push", (event) => (seen = event.id));
  await webhooks.verifyAndReceive({ id: "cjs", name: "push", payload: "{}", signature: await webhooks.sign("{}") });
  assert.equal(seen, "cjs");
  assert.equal(typeof require("@strata/webhooks/internals").receiverHandle, "function");
});
