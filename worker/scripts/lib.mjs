// What the receivers' tests and benchmark share: a local HTTP listener that
// records forwarded deliveries, GitHub-style signing, the example deliveries.
import { createHmac, randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { createServer } from "node:http";

/** `sha256=<hex>` of `body` with `secret`, as GitHub signs. */
export function sign(secret, body) {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/**
 * Every delivery of @octokit/webhooks-examples as `{ name, id, body }`, the
 * body a Buffer of the example's JSON (pretty-printed like GitHub's).
 */
export function exampleDeliveries() {
  const require = createRequire(import.meta.url);
  const examples = require("@octokit/webhooks-examples");
  const deliveries = [];
  for (const { name, examples: payloads } of examples) {
    for (const payload of payloads) {
      deliveries.push({ name, id: randomUUID(), body: Buffer.from(JSON.stringify(payload, null, 2)) });
    }
  }
  return deliveries;
}

/** The headers GitHub sends with a delivery. */
export function githubHeaders({ name, id, body }, secret) {
  return {
    "content-type": "application/json",
    "user-agent": "GitHub-Hookshot/strata-test",
    "x-github-event": name,
    "x-github-delivery": id,
    "x-github-hook-id": "42",
    "x-github-hook-installation-target-id": "7",
    "x-github-hook-installation-target-type": "repository",
    "x-hub-signature-256": sign(secret, body),
  };
}

/**
 * A listener on 127.0.0.1 recording every POST (method, path, headers, body
 * bytes). `answer(record)` picks the status (default 200).
 */
export async function startListener(answer = () => 200) {
  const received = [];
  const waiters = [];
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const record = { method: request.method, path: request.url, headers: request.headers, body: Buffer.concat(chunks) };
      received.push(record);
      response.writeHead(answer(record)).end();
      for (const waiter of waiters.splice(0)) waiter();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/in`,
    received,
    /** Resolves once `predicate(received)` holds; rejects after `ms`. */
    async until(predicate, ms = 30_000, what = "deliveries") {
      const deadline = Date.now() + ms;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (${received.length} received)`);
        await new Promise((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
