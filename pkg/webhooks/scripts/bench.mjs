// npm run bench: @strata/webhooks(-methods) side by side with
// @octokit/webhooks(-methods) in one process. Each row alternates rounds of
// the two and reports median operations per second and the median of the
// per-round ratios; then
// the gzip -9 size of what a user loads. Results go to BENCHMARKS.md.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { gzipSync } from "node:zlib";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import * as upstreamMethods from "@octokit/webhooks-methods";
import * as upstream from "@octokit/webhooks";
import * as ourMethods from "../../webhooks-methods/dist/node.mjs";
import * as ourUniversalMethods from "../../webhooks-methods/dist/index.mjs";
import * as ours from "../dist/node.mjs";

// Upstream's web build (WebCrypto), what browsers and workers get: the peer
// of our universal build.
const upstreamWebMethods = await import(new URL("../node_modules/@octokit/webhooks-methods/dist-web/index.js", import.meta.url));

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const ROUND_MS = Number(process.env.BENCH_ROUND_MS || 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 11);
const SECRET = "benchmark secret";

function payloadOf(bytes) {
  const skeleton = JSON.stringify({ action: "opened", data: "" });
  return JSON.stringify({ action: "opened", data: "x".repeat(bytes - skeleton.length) });
}
const small = payloadOf(1024);
const large = payloadOf(25 * 1024);
const push = readFileSync(join(pkgDir, "node_modules", "@octokit", "webhooks-examples", "api.github.com", "index.json"), "utf8");
const pushExample = JSON.stringify(JSON.parse(push).find((group) => group.name === "push").examples[0]);

async function round(fn) {
  let operations = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ROUND_MS) {
    for (let i = 0; i < 20; i++) await fn();
    operations += 20;
    now = performance.now();
  }
  return operations / ((now - start) / 1000);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const format = (value) => Math.round(value).toLocaleString("en-US");

async function serve(middleware) {
  const server = createServer(async (request, response) => {
    if (!(await middleware(request, response))) response.writeHead(404).end();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}/api/github/webhooks`, close: () => server.close() };
}

function rowsFor(methods, api) {
  const handlers = (webhooks) => {
    webhooks.on("push", () => {});
    webhooks.on("push", async () => {});
    webhooks.onAny(() => {});
    return webhooks;
  };
  const receiving = handlers(new api.Webhooks({ secret: SECRET }));
  const verifying = handlers(new api.Webhooks({ secret: SECRET }));
  return {
    setup: async () => {
      const signatures = { small: await methods.sign(SECRET, small), large: await methods.sign(SECRET, large), push: await methods.sign(SECRET, pushExample) };
      const server = await serve(api.createNodeMiddleware(handlers(new api.Webhooks({ secret: SECRET })), { log: { debug() {}, info() {}, warn() {}, error() {} } }));
      return { signatures, server };
    },
    rows: (state) => ({
      "sign 1 KB": () => methods.sign(SECRET, small),
      "verify 1 KB": () => methods.verify(SECRET, small, state.signatures.small),
      "sign 25 KB": () => methods.sign(SECRET, large),
      "verify 25 KB": () => methods.verify(SECRET, large, state.signatures.large),
      "receive (push, 3 handlers)": () => receiving.receive({ id: "1", name: "push", payload: JSON.parse(pushExample) }),
      "verifyAndReceive (push, 3 handlers)": () => verifying.verifyAndReceive({ id: "1", name: "push", payload: pushExample, signature: state.signatures.push }),
      "Node middleware delivery over loopback": async () => {
        const response = await fetch(state.server.url, {
          method: "POST",
          headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": "1", "x-hub-signature-256": state.signatures.push },
          body: pushExample,
        });
        if (response.status !== 200) throw new Error(`status ${response.status}`);
        await response.arrayBuffer();
      },
    }),
  };
}

const mine = rowsFor(ourMethods, ours);
const theirs = rowsFor(upstreamMethods, upstream);
const universal = rowsFor(ourUniversalMethods, ours);
const theirWeb = rowsFor(upstreamWebMethods, upstream);
const mineState = await mine.setup();
const theirState = await theirs.setup();
const mineRows = mine.rows(mineState);
const theirRows = theirs.rows(theirState);
const universalRows = universal.rows(mineState);
const theirWebRows = theirWeb.rows(theirState);
for (const name of ["sign 1 KB", "verify 1 KB", "sign 25 KB", "verify 25 KB"]) {
  mineRows[`${name}, universal builds (WebCrypto)`] = universalRows[name];
  theirRows[`${name}, universal builds (WebCrypto)`] = theirWebRows[name];
}

console.log(`node ${process.version}, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per package and row\n`);
console.log("Rows use the Node builds (the \"node\" export condition) unless marked universal: then our index.mjs against upstream's dist-web.\n");
console.log("| row | @strata ops/s | @octokit ops/s | ratio | per-round ratios, min–max |");
console.log("|---|---:|---:|---:|---:|");
for (const name of Object.keys(mineRows)) {
  for (let i = 0; i < 200; i++) {
    await mineRows[name]();
    await theirRows[name]();
  }
  const a = [];
  const b = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await round(mineRows[name]));
    b.push(await round(theirRows[name]));
  }
  // The median of per-round ratios: paired rounds cancel the machine's drift.
  const ratios = a.map((value, index) => value / b[index]);
  const ratio = median(ratios);
  console.log(`| ${name} | ${format(median(a))} | ${format(median(b))} | ${ratio.toFixed(2)}× | ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}× |`);
}
mineState.server.close();
theirState.server.close();

const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;
const upstreamFiles = [
  join(pkgDir, "node_modules", "@octokit", "webhooks", "dist-bundle", "index.js"),
  join(pkgDir, "node_modules", "@octokit", "webhooks-methods", "dist-node", "index.js"),
];
console.log(`\nsize, gzip -9: @strata/webhooks dist/index.mjs ${gz(join(pkgDir, "dist", "index.mjs"))} B (wasm embedded, signing included), ` +
  `@strata/webhooks-methods dist/index.mjs ${gz(join(pkgDir, "..", "webhooks-methods", "dist", "index.mjs"))} B; ` +
  `@octokit/webhooks dist-bundle/index.js + @octokit/webhooks-methods dist-node/index.js ${upstreamFiles.map(gz).reduce((a, b) => a + b)} B`);
