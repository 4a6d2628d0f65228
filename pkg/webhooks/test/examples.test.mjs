// Every example delivery of @octokit/webhooks-examples (api.github.com),
// signed with a test secret and delivered over real HTTP to the Node
// middleware and to the web middleware: each must reach exactly the handlers
// of its event and action. Tampered bodies, wrong secrets and truncated
// signatures must be refused and reach no handler.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { Webhooks, createNodeMiddleware, createWebMiddleware } from "@strata/webhooks";
import { sign } from "@strata/webhooks-methods";
import { deliver, serveNode, serveWeb } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const examples = require("@octokit/webhooks-examples/api.github.com/index.json");
const SECRET = "strata test secret";

function recordingWebhooks() {
  const webhooks = new Webhooks({ secret: SECRET });
  const seen = [];
  webhooks.onAny((event) => seen.push(`*:${event.name}:${event.id}`));
  return { webhooks, seen };
}

for (const [target, serve, create] of [["Node", serveNode, createNodeMiddleware], ["web", serveWeb, createWebMiddleware]]) {
  test(`every example delivery reaches its handlers through the ${target} middleware`, async () => {
    const { webhooks, seen } = recordingWebhooks();
    const names = new Set(examples.map((group) => group.name));
    for (const group of examples) {
      webhooks.on(group.name, (event) => seen.push(`${group.name}:${event.payload.action ?? ""}:${event.id}`));
      for (const action of group.actions) {
        webhooks.on(`${group.name}.${action}`, (event) => seen.push(`${group.name}.${action}:${event.id}`));
      }
    }
    const server = await serve(create(webhooks));
    let delivered = 0;
    try {
      for (const group of examples) {
        for (const [index, example] of group.examples.entries()) {
          const body = JSON.stringify(example);
          const id = `${group.name}-${index}`;
          seen.length = 0;
          const response = await deliver(`${server.url}/api/github/webhooks`, { event: group.name, id, signature: await sign(SECRET, body), body });
          assert.equal(response.status, 200, `${id}: ${await response.clone().text()}`);
          assert.equal(await response.text(), "ok\n");
          const expected = [];
          if (example.action && group.actions.includes(example.action)) expected.push(`${group.name}.${example.action}:${id}`);
          expected.push(`${group.name}:${example.action ?? ""}:${id}`, `*:${group.name}:${id}`);
          assert.deepEqual(seen, expected, id);
          delivered++;
        }
      }
    } finally {
      await server.close();
    }
    assert.ok(names.size >= 50 && delivered >= 300, `${delivered} deliveries of ${names.size} events`);
    console.log(`# ${target}: ${delivered} example deliveries of ${names.size} events`);
  });

  test(`tampered bodies, wrong secrets and truncated signatures are refused by the ${target} middleware`, async () => {
    const { webhooks, seen } = recordingWebhooks();
    const server = await serve(create(webhooks));
    try {
      const group = examples.find((candidate) => candidate.name === "issues");
      const body = JSON.stringify(group.examples[0]);
      const signature = await sign(SECRET, body);
      const tampered = body.replace('"number":', '"number":1');
      const cases = [
        ["tampered body", { signature, body: tampered }],
        ["wrong secret", { signature: await sign("not the secret", body), body }],
        ["truncated signature", { signature: signature.slice(0, 40), body }],
        ["signature without prefix", { signature: signature.slice(7), body }],
        ["upper-case signature", { signature: signature.toUpperCase(), body }],
      ];
      for (const [name, delivery] of cases) {
        const response = await deliver(`${server.url}/api/github/webhooks`, { event: "issues", ...delivery });
        assert.equal(response.status, 400, name);
        assert.deepEqual(await response.json(), { error: "Error: [@strata/webhooks] signature does not match event payload and secret" }, name);
      }
      assert.deepEqual(seen, []);
    } finally {
      await server.close();
    }
  });
}
