// Tests the edge receivers for real: the Rust Worker (strata-worker) and
// the JS Worker (js/, on @strata/webhooks) under `wrangler dev` (workerd
// from npm, offline), and the WASI-HTTP component under `wasmtime serve`.
// GitHub's example deliveries (@octokit/webhooks-examples) are signed and
// POSTed over loopback; a local listener receives what is forwarded and
// every forwarded delivery is compared byte for byte; refused deliveries
// must get the web middleware's exact answers and never be forwarded.
// Run `node scripts/build.mjs` first (tests/worker.sh does both).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startServer, startWrangler } from "../../pkg/shared/wrangler.mjs";
import { attempt, startGitHubMock } from "./github-mock.mjs";
import { exampleDeliveries, githubHeaders, sign, startListener } from "./lib.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", ".bin", "wrangler");
const SECRET = "strata-test-secret-4f1c";
const RETIRED = "strata-retired-secret-9b2e";
const VERSION = readFileSync(join(root, "..", "Cargo.toml"), "utf8").match(/^version = "(.+)"$/m)[1];

let passed = 0;
async function check(label, body) {
  await body();
  passed++;
  console.log(`ok - ${label}`);
}

/** The Rust worker's wrangler config for tests: the built files, no build step. */
function rustConfig() {
  const config = join(root, "build", "wrangler.test.toml");
  writeFileSync(config, 'name = "strata-receiver-test"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n');
  return config;
}

// The secrets files of this run, in one directory removed when it exits.
const secretsDir = mkdtempSync(join(tmpdir(), "strata-worker-"));
process.on("exit", () => rmSync(secretsDir, { recursive: true, force: true }));
let secretsFiles = 0;

function secretsFile(lines) {
  const file = join(secretsDir, `secrets-${++secretsFiles}.env`);
  writeFileSync(file, lines.map(([name, value]) => `${name}=${value}\n`).join(""));
  return file;
}

const SECRETS = [
  ["GITHUB_WEBHOOK_SECRET", SECRET],
  ["GITHUB_WEBHOOK_ADDITIONAL_SECRETS", `unused-one, ${RETIRED}`],
];

async function startRust(vars, secrets = SECRETS) {
  const args = ["--config", rustConfig(), "--env-file", secretsFile(secrets)];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  return startWrangler({ wrangler, cwd: root, args });
}

async function startJs(vars) {
  const args = ["--env-file", secretsFile(SECRETS)];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  return startWrangler({ wrangler, cwd: join(root, "js"), args });
}

/** `wasmtime serve` with the component; the secrets come from its environment. */
async function startWasi(vars) {
  const wasmtime = [process.env.WASMTIME, join(homedir(), ".cargo", "bin", "wasmtime")].find((p) => p && existsSync(p));
  if (!wasmtime) return null;
  const port = await freePort();
  const args = ["serve", "-S", "cli", "-S", "p3", "-W", "component-model-async", "--addr", `127.0.0.1:${port}`];
  const env = { ...vars };
  for (const [name, value] of [...SECRETS, ...Object.entries(vars)]) {
    env[name] = value;
    args.push("--env", name);
  }
  args.push(join(root, "wasi", "build", "strata-receiver.wasm"));
  const url = `http://127.0.0.1:${port}`;
  const reachable = () =>
    fetch(`${url}/health`).then(
      () => true,
      () => false,
    );
  const server = await startServer({ command: wasmtime, args, env, isReady: reachable, label: "wasmtime serve", timeoutMs: 60_000 });
  return { url, ...server };
}

async function post(url, headers, body) {
  return retriedAfterDevRestart(async () => {
    const response = await fetch(url, { method: "POST", headers, body });
    return {
      status: response.status,
      body: await response.text(),
      type: response.headers.get("content-type"),
      accept: response.headers.get("accept"),
    };
  });
}

/**
 * `wrangler dev`'s local proxy answers 503 with this text when workerd
 * restarted the Worker under a request (it does after an upload the Worker
 * refused before reading it: cloudflare/workerd#4660) and asks the client to
 * send it again; it retries only GET and HEAD itself. That answer never
 * comes from a receiver, so the request is sent again, at most twice, and
 * each time is said in the output.
 */
const DEV_RESTART = "Your worker restarted mid-request.";

async function retriedAfterDevRestart(call) {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await call();
    if (answer.status !== 503 || !answer.body.startsWith(DEV_RESTART) || attempt > 2) return answer;
    console.log(`   wrangler dev restarted the Worker under a request (attempt ${attempt}); sent again`);
  }
}

async function inParallel(items, limit, task) {
  let next = 0;
  const workers = Array.from({ length: limit }, async () => {
    while (next < items.length) await task(items[next++]);
  });
  await Promise.all(workers);
}

const GITHUB_HEADER = /^(x-github-|x-hub-signature)/;

/** Every example delivery is answered 200 and forwarded byte for byte. */
async function examplesAreForwarded(receiverUrl, listener) {
  const deliveries = exampleDeliveries();
  await inParallel(deliveries, 8, async (delivery) => {
    const answer = await post(`${receiverUrl}/api/github/webhooks`, githubHeaders(delivery, SECRET), delivery.body);
    assert.deepEqual(answer, { status: 200, body: "ok\n", type: "text/plain", accept: "application/json" }, delivery.name);
  });
  const ids = new Set(deliveries.map((delivery) => delivery.id));
  await listener.until((received) => received.filter((record) => ids.has(record.headers["x-github-delivery"])).length >= ids.size);
  for (const delivery of deliveries) {
    const records = listener.received.filter((record) => record.headers["x-github-delivery"] === delivery.id);
    assert.equal(records.length, 1, `${delivery.name} ${delivery.id} forwarded once`);
    const [record] = records;
    assert.equal(record.method, "POST");
    assert.equal(record.path, "/in");
    assert.ok(record.body.equals(delivery.body), `${delivery.name}: body forwarded byte for byte`);
    const sent = githubHeaders(delivery, SECRET);
    const forwardedGitHub = Object.fromEntries(Object.entries(record.headers).filter(([name]) => GITHUB_HEADER.test(name)));
    const sentGitHub = Object.fromEntries(Object.entries(sent).filter(([name]) => GITHUB_HEADER.test(name)));
    assert.deepEqual(forwardedGitHub, sentGitHub);
    assert.equal(record.headers["content-type"], "application/json");
    assert.equal(record.headers["user-agent"], "GitHub-Hookshot/strata-test");
  }
  return deliveries.length;
}

function delivery(name, payload, id = crypto.randomUUID()) {
  return { name, id, body: Buffer.from(JSON.stringify(payload)) };
}

/** Requests every receiver must refuse, with the web middleware's answers. */
function refusals() {
  const json = "application/json";
  const mismatch = '{"error":"Error: [@strata/webhooks] signature does not match event payload and secret"}';
  const cases = [];
  const add = (label, id, request, expected) => cases.push({ label, id, request, expected });
  const push = delivery("push", { ref: "refs/heads/main" });
  const tampered = { ...githubHeaders(push, SECRET) };
  add("tampered body", push.id, { headers: tampered, body: Buffer.from('{"ref":"refs/heads/evil"}') }, [400, mismatch, json, json]);
  const wrong = delivery("push", { ref: "x" });
  add("wrong secret", wrong.id, { headers: githubHeaders(wrong, "not-the-secret"), body: wrong.body }, [400, mismatch, json, json]);
  const upper = delivery("push", { ref: "y" });
  const upperHeaders = githubHeaders(upper, SECRET);
  upperHeaders["x-hub-signature-256"] = upperHeaders["x-hub-signature-256"].toUpperCase();
  add("upper-case signature", upper.id, { headers: upperHeaders, body: upper.body }, [400, mismatch, json, json]);
  const sha1 = delivery("push", { ref: "z" });
  const sha1Headers = githubHeaders(sha1, SECRET);
  sha1Headers["x-hub-signature-256"] = sha1Headers["x-hub-signature-256"].replace("sha256=", "sha1=");
  add("sha1= prefix", sha1.id, { headers: sha1Headers, body: sha1.body }, [400, mismatch, json, json]);
  const unsigned = delivery("push", { ref: "u" });
  const unsignedHeaders = githubHeaders(unsigned, SECRET);
  delete unsignedHeaders["x-hub-signature-256"];
  add("missing signature", unsigned.id, { headers: unsignedHeaders, body: unsigned.body }, [
    400,
    '{"error":"Required headers missing: x-hub-signature-256"}',
    json,
    json,
  ]);
  add("no GitHub headers", undefined, { headers: { "content-type": json }, body: "{}" }, [
    400,
    '{"error":"Required headers missing: x-github-event, x-hub-signature-256, x-github-delivery"}',
    json,
    json,
  ]);
  const form = delivery("push", { ref: "f" });
  add("form content type", form.id, { headers: { ...githubHeaders(form, SECRET), "content-type": "application/x-www-form-urlencoded" }, body: form.body }, [
    415,
    '{"error":"Unsupported \\"Content-Type\\" header value. Must be \\"application/json\\""}',
    json,
    json,
  ]);
  const notJson = { name: "push", id: crypto.randomUUID(), body: Buffer.from("{not json") };
  add("signed, not JSON", notJson.id, { headers: githubHeaders(notJson, SECRET), body: notJson.body }, [
    400,
    '{"error":"SyntaxError: Invalid JSON"}',
    json,
    json,
  ]);
  const limit = 25 * 1024 * 1024;
  const large = { name: "push", id: crypto.randomUUID(), body: Buffer.alloc(limit + 1, 0x20) };
  const tooLarge = [413, `{"error":"Payload too large: the limit is ${limit} bytes"}`, json, json];
  const request = { headers: githubHeaders(large, SECRET), body: large.body, large: true };
  add("25 MiB + 1 with content-length", large.id, request, tooLarge);
  const chunked = { name: "push", id: crypto.randomUUID(), body: Buffer.alloc(limit + 1, 0x20) };
  add("25 MiB + 1 chunked", chunked.id, { headers: githubHeaders(chunked, SECRET), body: chunked.body, chunked: true }, tooLarge);
  return cases;
}

/**
 * Sends one request with node:http, in 1 MiB pieces, and stops writing once
 * the answer has arrived: a receiver may answer 413 before reading the body
 * and close the connection (fetch would report the broken pipe instead of
 * the answer). With `expectContinue`, the body waits for `100 Continue`.
 */
function send(url, request) {
  return retriedAfterDevRestart(() => resentAfterReset(() => sendOnce(url, request)));
}

/**
 * A refusal sent again (twice at most) when the host reset the connection
 * under its answer: wasmtime serve, answering a 25 MiB body's 413 early,
 * once closed the connection mid-answer under a loaded CI run (`aborted`,
 * ECONNRESET). A refused request is never forwarded, so sending it again
 * changes nothing the test asserts; the retry is logged.
 */
async function resentAfterReset(call) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const reset = error?.code === "ECONNRESET" || error?.message === "aborted";
      if (!reset || attempt > 2) throw error;
      console.log(`   the connection was reset under the answer (attempt ${attempt}: ${error.message}); sent again`);
    }
  }
}

function sendOnce(url, { headers, body, chunked, expectContinue, method = "POST" }) {
  return new Promise((resolve, reject) => {
    const outgoing = { ...headers };
    if (!chunked) outgoing["content-length"] = String(Buffer.byteLength(body));
    if (expectContinue) outgoing.expect = "100-continue";
    let answered = false;
    const call = request(url, { method, headers: outgoing, agent: false }, (response) => {
      answered = true;
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode,
          body: Buffer.concat(chunks).toString(),
          type: response.headers["content-type"] ?? null,
          accept: response.headers.accept ?? null,
        }),
      );
      response.on("error", reject);
    });
    // A write error before the answer is parsed may still be followed by it.
    const failed = (error) => {
      if (!answered) setTimeout(() => answered || reject(error), 2000);
    };
    call.on("error", failed);
    const bytes = Buffer.from(body);
    const piece = 1 << 20;
    (async () => {
      if (expectContinue) {
        call.flushHeaders();
        await new Promise((next) => {
          call.once("continue", next);
          call.once("response", next);
        });
      }
      let offset = 0;
      for (; offset < bytes.length && !answered && !call.destroyed; offset += piece) {
        if (!call.write(bytes.subarray(offset, offset + piece))) await new Promise((next) => call.once("drain", next));
        await new Promise((next) => setImmediate(next));
      }
      // A complete request ends properly (a proxy may take an unfinished one
      // for an aborted upload); one answered half-way is abandoned.
      if (call.destroyed) return;
      if (offset >= bytes.length) call.end();
      else call.destroy();
    })().catch(failed);
  });
}

/**
 * Refused requests get the expected answers and are never forwarded.
 * `expectContinue`: send the 25 MiB body content-length case as curl does,
 * with `Expect: 100-continue` — wasmtime serve answers the 413 before the
 * body then, while without it the connection is sometimes closed before the
 * answer is written. (wrangler dev's local proxy resets such requests, so
 * the Workers get the body at once.)
 */
async function refusalsAreNeverForwarded(receiverUrl, listener, { compareWith, expectContinue = false } = {}) {
  const cases = refusals();
  for (const { label, request, expected } of cases) {
    const answer = await send(`${receiverUrl}/api/github/webhooks`, { ...request, expectContinue: expectContinue && request.large });
    assert.deepEqual([answer.status, answer.body, answer.type, answer.accept], expected, label);
    if (compareWith) {
      const reference = await send(`${compareWith}/api/github/webhooks`, request);
      assert.deepEqual(answer, reference, `${label}: same answer as the web middleware`);
    }
  }
  const sentinel = delivery("push", { ref: "sentinel" });
  assert.equal((await post(`${receiverUrl}/api/github/webhooks`, githubHeaders(sentinel, SECRET), sentinel.body)).status, 200);
  await listener.until((received) => received.some((record) => record.headers["x-github-delivery"] === sentinel.id));
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const refusedIds = new Set(cases.map((entry) => entry.id).filter(Boolean));
  const leaked = listener.received.filter((record) => refusedIds.has(record.headers["x-github-delivery"]));
  assert.deepEqual(leaked.map((record) => record.headers["x-github-delivery"]), [], "refused deliveries were forwarded");
  return cases.length;
}

/** Transient failures are retried (bounded), permanent ones given up, both logged. */
async function retriesAreBoundedAndLogged(receiverUrl, listener, output) {
  const retried = delivery("issues", { action: "opened" }, `retry-${crypto.randomUUID()}`);
  const gone = delivery("issues", { action: "opened" }, `gone-${crypto.randomUUID()}`);
  const down = delivery("issues", { action: "opened" }, `down-${crypto.randomUUID()}`);
  for (const entry of [retried, gone, down]) {
    assert.equal((await post(`${receiverUrl}/api/github/webhooks`, githubHeaders(entry, SECRET), entry.body)).status, 200);
  }
  const count = (id) => listener.received.filter((record) => record.headers["x-github-delivery"] === id).length;
  await listener.until(() => count(retried.id) >= 3 && count(gone.id) >= 1 && count(down.id) >= 3, 30_000, "retries");
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual([count(retried.id), count(gone.id), count(down.id)], [3, 1, 3]);
  const logged = output();
  assert.ok(logged.includes(`forwarded: issues delivery ${retried.id} to FORWARD_URL after 3 attempts (last: HTTP 200)`), logged.slice(-2000));
  assert.ok(logged.includes(`NOT forwarded, gave up: issues delivery ${gone.id} to FORWARD_URL after 1 attempt (last: HTTP 410)`), logged.slice(-2000));
  assert.ok(logged.includes(`NOT forwarded, gave up: issues delivery ${down.id} to FORWARD_URL after 3 attempts (last: HTTP 503)`), logged.slice(-2000));
}

/** The listener's answers: retry-* fails twice, gone-* is refused, down-* always fails. */
function plannedAnswers() {
  const seen = new Map();
  return (record) => {
    const id = String(record.headers["x-github-delivery"] || "");
    const attempt = (seen.get(id) || 0) + 1;
    seen.set(id, attempt);
    if (id.startsWith("retry-")) return attempt <= 2 ? 503 : 200;
    if (id.startsWith("gone-")) return 410;
    if (id.startsWith("down-")) return 503;
    return 200;
  };
}

function assertNoSecrets(output, label) {
  for (const secret of [SECRET, RETIRED]) assert.ok(!output.includes(secret), `${label}: a secret appeared in the logs`);
}

async function rustWorker() {
  const listener = await startListener(plannedAnswers());
  const js = await startJs({ FORWARD_URL: listener.url });
  const rust = await startRust({ FORWARD_URL: listener.url });
  try {
    await check("rust worker: health answers 200 with the build version", async () => {
      const response = await fetch(`${rust.url}/health`);
      assert.equal(response.status, 200);
      assert.equal(await response.text(), `{"status":"ok","version":"strata-worker/${VERSION}"}`);
    });
    await check("rust worker: unknown routes get 404, GET on the hook path too", async () => {
      const other = await fetch(`${rust.url}/elsewhere`);
      assert.deepEqual([other.status, await other.text()], [404, '{"error":"Unknown route: GET /elsewhere"}']);
      const get = await fetch(`${rust.url}/api/github/webhooks`);
      const reference = await fetch(`${js.url}/api/github/webhooks`);
      assert.deepEqual([get.status, await get.text()], [404, '{"error":"Unknown route: GET /api/github/webhooks"}']);
      assert.deepEqual([reference.status, await reference.text()], [404, '{"error":"Unknown route: GET /api/github/webhooks"}']);
    });
    await check("rust worker: every @octokit/webhooks-examples delivery answered 200 and forwarded byte for byte", async () => {
      const count = await examplesAreForwarded(rust.url, listener);
      console.log(`   ${count} deliveries`);
    });
    await check("rust worker: a delivery signed with an additional (retired) secret is accepted", async () => {
      const retired = delivery("ping", { zen: "Keep it logically awesome." });
      const answer = await post(`${rust.url}/api/github/webhooks`, githubHeaders(retired, RETIRED), retired.body);
      assert.equal(answer.status, 200);
      await listener.until((received) => received.some((record) => record.headers["x-github-delivery"] === retired.id));
    });
    await check("rust worker: refusals answer exactly like the web middleware and are never forwarded", async () => {
      const count = await refusalsAreNeverForwarded(rust.url, listener, { compareWith: js.url });
      console.log(`   ${count} refused requests, each compared with @strata/webhooks' web middleware in the JS worker`);
    });
    await check("rust worker: forward retries are bounded, logged, and 4xx is not retried", () =>
      retriesAreBoundedAndLogged(rust.url, listener, rust.output),
    );
    await check("rust worker: no secret in the logs", () => assertNoSecrets(rust.output(), "rust worker"));
    await check("rust worker: signatures are checked with WebCrypto's HMAC (said once per isolate)", () => {
      const said = rust.output().split("\n").filter((line) => line.includes("signatures are checked with WebCrypto's HMAC"));
      assert.equal(said.length, 1, rust.output().slice(-2000));
      assert.ok(!rust.output().includes("signatures are checked in WebAssembly"));
    });
    // The same JS Worker instance as above: two `wrangler dev` sessions of one
    // project share its .wrangler directory and restart each other.
    await check("js worker: every example delivery answered 200 and forwarded byte for byte", async () => {
      try {
        console.log(`   ${await examplesAreForwarded(js.url, listener)} deliveries`);
        await refusalsAreNeverForwarded(js.url, listener);
      } catch (error) {
        console.error(`--- js worker output ---\n${js.output().slice(-3000)}`);
        throw error;
      }
    });
  } catch (error) {
    console.error(`--- rust worker output ---\n${rust.output().slice(-3000)}`);
    throw error;
  } finally {
    await rust.stop();
    await js.stop();
    await listener.close();
  }
}

async function rustWorkerFiltered() {
  const listener = await startListener();
  const rust = await startRust({ FORWARD_URL: listener.url, EVENTS: "issues.opened, push", WEBHOOK_PATH: "/hooks" });
  try {
    await check("rust worker: EVENTS forwards only the listed events and actions, on WEBHOOK_PATH", async () => {
      const sent = {
        opened: delivery("issues", { action: "opened" }),
        closed: delivery("issues", { action: "closed" }),
        push: delivery("push", { ref: "refs/heads/main" }),
        ping: delivery("ping", { zen: "z" }),
      };
      for (const entry of Object.values(sent)) {
        assert.equal((await post(`${rust.url}/hooks/`, githubHeaders(entry, SECRET), entry.body)).status, 200);
      }
      const old = await post(`${rust.url}/api/github/webhooks`, githubHeaders(sent.push, SECRET), sent.push.body);
      assert.deepEqual([old.status, old.body], [404, '{"error":"Unknown route: POST /api/github/webhooks"}']);
      const last = delivery("push", { ref: "last" });
      assert.equal((await post(`${rust.url}/hooks`, githubHeaders(last, SECRET), last.body)).status, 200);
      await listener.until((received) => received.some((record) => record.headers["x-github-delivery"] === last.id));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const ids = listener.received.map((record) => record.headers["x-github-delivery"]).sort();
      assert.deepEqual(ids, [sent.opened.id, sent.push.id, last.id].sort());
    });
  } finally {
    await rust.stop();
    await listener.close();
  }
}

async function rustWorkerMisconfigured() {
  const rust = await startRust({ FORWARD_URL: "http://127.0.0.1:9/in" }, []);
  try {
    await check("rust worker: without GITHUB_WEBHOOK_SECRET, health says so (503) and deliveries get 503", async () => {
      const health = await fetch(`${rust.url}/health`);
      assert.deepEqual([health.status, await health.text()], [
        503,
        `{"status":"misconfigured","version":"strata-worker/${VERSION}","error":"GITHUB_WEBHOOK_SECRET is not set: deliveries cannot be verified"}`,
      ]);
      const push = delivery("push", { ref: "x" });
      const answer = await post(`${rust.url}/api/github/webhooks`, githubHeaders(push, SECRET), push.body);
      assert.deepEqual([answer.status, answer.body], [
        503,
        '{"error":"receiver misconfigured: GITHUB_WEBHOOK_SECRET is not set: deliveries cannot be verified"}',
      ]);
    });
  } finally {
    await rust.stop();
  }
}

/** wrangler configs of the queue tests: the Rust Worker as producer, the fixture as consumer. */
function queueConfigs(listener, { bucket = true } = {}) {
  const r2 = '[[r2_buckets]]\nbinding = "WEBHOOK_BODIES"\nbucket_name = "github-delivery-bodies"\n';
  const producer = join(root, "build", bucket ? "wrangler.queue.toml" : "wrangler.queue-nobucket.toml");
  writeFileSync(
    producer,
    'name = "strata-receiver-queue-test"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n' +
      '[[queues.producers]]\nbinding = "WEBHOOK_QUEUE"\nqueue = "github-deliveries"\n' +
      (bucket ? r2 : ""),
  );
  const consumer = join(root, "build", "wrangler.consumer.toml");
  writeFileSync(
    consumer,
    `name = "strata-queue-consumer"\nmain = ${JSON.stringify(join(root, "scripts", "fixtures", "queue-consumer.js"))}\n` +
      'compatibility_date = "2025-09-01"\n[[queues.consumers]]\nqueue = "github-deliveries"\nmax_batch_timeout = 1\n' +
      '[[queues.producers]]\nbinding = "PROBE_QUEUE"\nqueue = "probe"\n[[queues.consumers]]\nqueue = "probe"\n' +
      r2 +
      `[vars]\nLISTENER = ${JSON.stringify(listener.url)}\n`,
  );
  return { producer, consumer };
}

/** A push delivery whose body is `size` bytes of valid JSON (`filler` repeated in a string). */
function bigDelivery(size, filler = "a") {
  const head = '{"ref":"refs/heads/main","filler":"';
  const tail = '"}';
  const count = Math.floor((size - head.length - tail.length) / filler.length);
  const body = Buffer.from(head + filler.repeat(count) + tail);
  return { name: "push", id: crypto.randomUUID(), body };
}

async function rustWorkerWithQueue() {
  const listener = await startListener();
  const { producer, consumer } = queueConfigs(listener);
  const args = ["--config", producer, "--config", consumer, "--env-file", secretsFile(SECRETS)];
  const rust = await startWrangler({ wrangler, cwd: root, args });
  let both;
  let noBucket;
  const queuedRecord = (id) => listener.received.find((record) => record.headers["x-github-delivery"] === id);
  try {
    await check("rust worker: with a WEBHOOK_QUEUE binding and no FORWARD_URL, deliveries go to the queue", async () => {
      const health = await fetch(`${rust.url}/health`);
      assert.equal(health.status, 200);
      const sent = delivery("issues", { action: "labeled", label: { name: "ü" } });
      assert.equal((await post(`${rust.url}/api/github/webhooks`, githubHeaders(sent, SECRET), sent.body)).status, 200);
      await listener.until((received) => received.length >= 1, 30_000, "the queued delivery");
      const [record] = listener.received;
      assert.ok(record.body.equals(sent.body), "queued body is the delivery's");
      assert.deepEqual(JSON.parse(record.headers["x-strata-queued"]), {
        id: sent.id,
        name: "issues",
        action: "labeled",
        hookId: "42",
        bodySize: sent.body.length,
        claimCheck: false,
        bodyKey: null,
      });
      assert.equal(record.headers["x-hub-signature-256"], sign(SECRET, sent.body));
      assert.equal(record.headers["x-github-delivery"], sent.id);
      assert.ok(rust.output().includes(`forwarded: issues delivery ${sent.id} to WEBHOOK_QUEUE after 1 attempt (last: sent)`));
    });
    await check("rust worker: bodies too large for a queue message go through the WEBHOOK_BODIES bucket (claim check)", async () => {
      // 2 MB; 127,000 bytes (inline would be just over the limit); 90 KB of
      // quotes, which JSON escaping doubles past the limit.
      const sent = [bigDelivery(2_000_000), bigDelivery(127_000), bigDelivery(90_000, '\\"')];
      const small = bigDelivery(120_000);
      for (const entry of [...sent, small]) {
        assert.equal((await post(`${rust.url}/api/github/webhooks`, githubHeaders(entry, SECRET), entry.body)).status, 200);
      }
      await listener.until(() => [...sent, small].every((entry) => queuedRecord(entry.id)), 30_000, "the queued deliveries");
      for (const entry of sent) {
        const record = queuedRecord(entry.id);
        assert.ok(record.body.equals(entry.body), `${entry.body.length} bytes forwarded byte for byte`);
        const queued = JSON.parse(record.headers["x-strata-queued"]);
        assert.deepEqual(queued, { id: entry.id, name: "push", action: null, hookId: "42", bodySize: entry.body.length, claimCheck: true, bodyKey: `deliveries/42/${entry.id}` });
        assert.equal(record.headers["x-hub-signature-256"], sign(SECRET, entry.body));
        assert.ok(rust.output().includes(`forwarded: push delivery ${entry.id} to WEBHOOK_QUEUE after 1 attempt (last: sent)`));
      }
      const inline = queuedRecord(small.id);
      assert.ok(inline.body.equals(small.body));
      assert.equal(JSON.parse(inline.headers["x-strata-queued"]).claimCheck, false, "120 KB still fits inline");
    });
    await rust.stop();
    await check("rust worker: the local queue refuses a message above 128 KB, as Cloudflare does", async () => {
      const probe = await startWrangler({ wrangler, cwd: root, args: ["--config", consumer] });
      try {
        const fits = await fetch(`${probe.url}/probe?bytes=127000`);
        assert.deepEqual([fits.status, await fits.text()], [200, "sent"]);
        const over = await fetch(`${probe.url}/probe?bytes=128001`);
        assert.equal(over.status, 500);
        assert.match(await over.text(), /exceeds limit of 128000/);
      } finally {
        await probe.stop();
      }
    });
    await check("rust worker: with a queue and no bucket, a too-large delivery is not queued and the log says why", async () => {
      const plain = queueConfigs(listener, { bucket: false });
      noBucket = await startWrangler({ wrangler, cwd: root, args: ["--config", plain.producer, "--config", plain.consumer, "--env-file", secretsFile(SECRETS)] });
      const large = bigDelivery(300_000);
      const after = delivery("push", { ref: "after" });
      for (const entry of [large, after]) {
        assert.equal((await post(`${noBucket.url}/api/github/webhooks`, githubHeaders(entry, SECRET), entry.body)).status, 200);
      }
      await listener.until(() => queuedRecord(after.id), 30_000, "the small delivery");
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal(queuedRecord(large.id), undefined);
      const logged = noBucket.output();
      assert.ok(
        logged.includes(`NOT forwarded: push delivery ${large.id} to WEBHOOK_QUEUE: its message (300`) &&
          logged.includes("does not fit the queue's 128000 bytes less 1024 for the platform's framing, and no WEBHOOK_BODIES bucket is bound"),
        logged.slice(-2000),
      );
      assert.ok(logged.includes("a queue is bound without a WEBHOOK_BODIES bucket"), "the configuration warning");
      await noBucket.stop();
    });
    await check("rust worker: with FORWARD_URL and a queue, each delivery goes to both", async () => {
      listener.received.length = 0;
      both = await startWrangler({ wrangler, cwd: root, args: [...args, "--var", `FORWARD_URL:${listener.url}`] });
      const sent = delivery("push", { ref: "refs/heads/main" });
      assert.equal((await post(`${both.url}/api/github/webhooks`, githubHeaders(sent, SECRET), sent.body)).status, 200);
      await listener.until((received) => received.length >= 2, 30_000, "the delivery, direct and queued");
      const queued = listener.received.filter((record) => record.headers["x-strata-queued"]);
      const direct = listener.received.filter((record) => !record.headers["x-strata-queued"]);
      assert.equal(queued.length, 1);
      assert.equal(direct.length, 1);
      for (const record of [...queued, ...direct]) {
        assert.ok(record.body.equals(sent.body));
        assert.equal(record.headers["x-github-delivery"], sent.id);
      }
    });
  } catch (error) {
    console.error(`--- wrangler output ---\n${rust.output().slice(-3000)}\n${noBucket?.output().slice(-3000) ?? ""}`);
    throw error;
  } finally {
    await rust.stop();
    await both?.stop();
    await noBucket?.stop();
    await listener.close();
  }
}

/** wrangler.toml lines binding the WEBHOOK_DEDUP Durable Object namespace (its class is in the Worker). */
const DEDUP_BINDING_TOML =
  '[[durable_objects.bindings]]\nname = "WEBHOOK_DEDUP"\nclass_name = "DeliveryLedger"\n' +
  '[[migrations]]\ntag = "v1"\nnew_sqlite_classes = ["DeliveryLedger"]\n';

/** The Rust Worker with the WEBHOOK_DEDUP Durable Object bound and a 4-second window. */
async function rustWorkerDeduplicates() {
  const listener = await startListener(plannedAnswers());
  const config = join(root, "build", "wrangler.dedup.toml");
  writeFileSync(
    config,
    'name = "strata-receiver-dedup-test"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n' +
      DEDUP_BINDING_TOML,
  );
  const rust = await startWrangler({
    wrangler,
    cwd: root,
    args: ["--config", config, "--env-file", secretsFile(SECRETS), "--var", `FORWARD_URL:${listener.url}`, "--var", "DEDUP_WINDOW_SECONDS:4"],
  });
  const count = (id) => listener.received.filter((record) => record.headers["x-github-delivery"] === id).length;
  const send = async (entry, headers = githubHeaders(entry, SECRET)) => {
    const answer = await post(`${rust.url}/api/github/webhooks`, headers, entry.body);
    assert.deepEqual([answer.status, answer.body], [200, "ok\n"]);
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));
  try {
    await check("rust worker: a redelivery (same hook, same X-GitHub-Delivery) gets 200 and is not forwarded again", async () => {
      const sent = delivery("push", { ref: "once" });
      await send(sent);
      await listener.until(() => count(sent.id) >= 1, 30_000, "the first forward");
      await settle();
      await send(sent);
      await send(sent);
      await settle();
      assert.equal(count(sent.id), 1);
      const duplicates = rust.output().split("\n").filter((line) => line.includes(`duplicate, not forwarded: push delivery ${sent.id} of hook 42 was forwarded`));
      assert.equal(duplicates.length, 2, rust.output().slice(-2000));
      // Another hook's delivery with the same id is its own delivery.
      await send(sent, { ...githubHeaders(sent, SECRET), "x-github-hook-id": "43" });
      await listener.until(() => count(sent.id) >= 2, 30_000, "the other hook's forward");
    });
    await check("rust worker: 20 concurrent copies of one delivery are forwarded exactly once", async () => {
      const sent = delivery("issues", { action: "opened" });
      await Promise.all(Array.from({ length: 20 }, () => send(sent)));
      await listener.until(() => count(sent.id) >= 1, 30_000, "the forward");
      await settle();
      assert.equal(count(sent.id), 1);
      const duplicates = rust.output().split("\n").filter((line) => line.includes(`duplicate, not forwarded: issues delivery ${sent.id}`));
      assert.equal(duplicates.length, 19);
    });
    await check("rust worker: after DEDUP_WINDOW_SECONDS a copy is forwarded again; a failed forward does not block its redelivery", async () => {
      const sent = delivery("push", { ref: "window" });
      await send(sent);
      await listener.until(() => count(sent.id) >= 1, 30_000, "the first forward");
      await new Promise((resolve) => setTimeout(resolve, 4500));
      await send(sent);
      await listener.until(() => count(sent.id) >= 2, 30_000, "the forward after the window");
      // The listener refuses gone-* (410, not retried): the claim is released.
      const gone = delivery("push", { ref: "gone" }, `gone-${crypto.randomUUID()}`);
      await send(gone);
      await listener.until(() => count(gone.id) >= 1, 30_000, "the refused forward");
      await settle();
      await send(gone);
      await listener.until(() => count(gone.id) >= 2, 30_000, "the redelivery of a failed forward");
    });
    await check("rust worker (de-duplication): no secret in the logs", () => assertNoSecrets(rust.output(), "rust worker"));
  } catch (error) {
    console.error(`--- wrangler output ---\n${rust.output().slice(-3000)}`);
    throw error;
  } finally {
    await rust.stop();
    await listener.close();
  }
}

/** The scheduled redelivery run against the local GitHub mock, as a GitHub App and with a token. */
async function rustWorkerRedelivers() {
  const keyDir = join(root, "..", "tests", "data", "redeliver");
  const privateKey = readFileSync(join(keyDir, "test-app-key.pem"), "utf8");
  const publicKeyPem = readFileSync(join(keyDir, "test-app-key.pub.pem"), "utf8");
  const deliveries = [
    attempt(1, "g-ok", 5, 200),
    attempt(2, "g-fail-1", 50, 503, { event: "issues", action: "opened" }),
    attempt(3, "g-fail-2", 40, 0),
    attempt(4, "g-fail-3", 30, 500),
    attempt(5, "g-fail-4", 20, 502),
    attempt(6, "g-seen", 10, 504),
    attempt(7, "g-exhausted", 60, 500),
    attempt(8, "g-exhausted", 58, 500, { redelivery: true }),
    attempt(9, "g-exhausted", 56, 500, { redelivery: true }),
    attempt(10, "g-exhausted", 54, 500, { redelivery: true }),
    attempt(11, "g-old", 4 * 24 * 60, 500),
  ];
  const mock = await startGitHubMock({ deliveries, app: { appId: "12345", publicKeyPem } });
  const listener = await startListener();
  const config = join(root, "build", "wrangler.redeliver.toml");
  writeFileSync(
    config,
    'name = "strata-receiver-redeliver-test"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n' +
      '[triggers]\ncrons = ["*/10 * * * *"]\n' +
      DEDUP_BINDING_TOML,
  );
  const secrets = [...SECRETS, ["GITHUB_APP_PRIVATE_KEY", privateKey.replaceAll("\n", "\\n")]];
  const vars = { FORWARD_URL: listener.url, GITHUB_APP_ID: "12345", GITHUB_APP_HOOK_ID: "42", GITHUB_API_URL: mock.url, REDELIVER_MAX_PER_RUN: "3" };
  // Fresh local state: the Durable Objects of earlier runs must not remember g-seen.
  const state = mkdtempSync(join(tmpdir(), "strata-worker-state-"));
  const args = ["--config", config, "--test-scheduled", "--persist-to", state, "--env-file", secretsFile(secrets)];
  for (const [name, value] of Object.entries(vars)) args.push("--var", `${name}:${value}`);
  const rust = await startWrangler({ wrangler, cwd: root, args });
  let tokenWorker;
  const summaries = () => rust.output().split("\n").filter((line) => line.includes("redelivery run:"));
  const trigger = async (worker, count) => {
    const response = await fetch(`${worker.url}/__scheduled?cron=*/10+*+*+*+*`);
    assert.equal(response.status, 200);
    const deadline = Date.now() + 30_000;
    while (worker.output().split("\n").filter((line) => line.includes("redelivery run:")).length < count) {
      if (Date.now() > deadline) throw new Error(`no summary line for run ${count}:\n${worker.output().slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  try {
    await check("rust worker: the Cron run lists the app's deliveries page by page and redelivers the failed ones, oldest first, bounded per run", async () => {
      // g-seen reached this receiver (GitHub recorded a timeout): it is forwarded and remembered.
      const seen = { name: "push", id: "g-seen", body: Buffer.from('{"ref":"refs/heads/main"}') };
      assert.equal((await post(`${rust.url}/api/github/webhooks`, githubHeaders(seen, SECRET), seen.body)).status, 200);
      await listener.until((received) => received.some((record) => record.headers["x-github-delivery"] === "g-seen"));
      await new Promise((resolve) => setTimeout(resolve, 500));
      await trigger(rust, 1);
      assert.deepEqual(mock.redeliveries, ["g-fail-1", "g-fail-2", "g-fail-3"]);
      const lists = mock.requests.filter((request) => request.method === "GET");
      assert.deepEqual(lists.map((request) => request.query), ["?per_page=100", "?per_page=100&cursor=v1_3", "?per_page=100&cursor=v1_6", "?per_page=100&cursor=v1_9"]);
      for (const request of mock.requests) {
        assert.equal(request.headers["user-agent"], `strata-worker/${VERSION}`);
        assert.equal(request.headers["x-github-api-version"], "2022-11-28");
        assert.equal(request.headers.accept, "application/vnd.github.v3+json");
      }
      const posts = mock.requests.filter((request) => request.method === "POST").map((request) => request.path);
      assert.deepEqual(posts, ["/app/hook/deliveries/2/attempts", "/app/hook/deliveries/3/attempts", "/app/hook/deliveries/4/attempts"]);
      // The budget (3) is spent before g-fail-4 and g-seen are reached.
      assert.equal(summaries().length, 1);
      assert.ok(summaries()[0].endsWith(
        "redelivery run: 11 attempts listed on 4 page(s); 6 deliveries never succeeded: 3 redelivered, 0 already forwarded here, 0 refused, 1 given up after their attempts, 2 left for the next run",
      ), summaries()[0]);
      assert.ok(rust.output().includes("redelivery requested: issues.opened delivery g-fail-1 (attempt 2)"));
    });
    await check("rust worker: a second and third run redeliver only what is left, and not what this receiver forwarded (idempotent)", async () => {
      await trigger(rust, 2);
      assert.deepEqual(mock.redeliveries, ["g-fail-1", "g-fail-2", "g-fail-3", "g-fail-4"]);
      assert.ok(summaries()[1].endsWith("redelivery run: 14 attempts listed on 5 page(s); 3 deliveries never succeeded: 1 redelivered, 1 already forwarded here, 0 refused, 1 given up after their attempts, 0 left for the next run"), summaries()[1]);
      await trigger(rust, 3);
      assert.equal(mock.redeliveries.length, 4);
      assert.ok(summaries()[2].includes(": 0 redelivered, 1 already forwarded here"), summaries()[2]);
    });
    await check("rust worker: with GITHUB_TOKEN and REDELIVER_HOOK the repository's hook is used", async () => {
      await rust.stop();
      const repoDeliveries = [attempt(21, "r-fail", 15, 500), attempt(22, "r-ok", 10, 200)];
      const repoMock = await startGitHubMock({ deliveries: repoDeliveries, token: { token: "ghp_t0ken_for_tests", hook: "repos/octo-org/hello/hooks/99" } });
      try {
        const tokenArgs = ["--config", config, "--test-scheduled", "--persist-to", state, "--env-file", secretsFile([...SECRETS, ["GITHUB_TOKEN", "ghp_t0ken_for_tests"]])];
        for (const [name, value] of Object.entries({ FORWARD_URL: listener.url, REDELIVER_HOOK: "repos/octo-org/hello/hooks/99", GITHUB_API_URL: repoMock.url })) {
          tokenArgs.push("--var", `${name}:${value}`);
        }
        tokenWorker = await startWrangler({ wrangler, cwd: root, args: tokenArgs });
        await trigger(tokenWorker, 1);
        assert.deepEqual(repoMock.redeliveries, ["r-fail"]);
        assert.deepEqual(repoMock.requests.map((request) => `${request.method} ${request.path}`), [
          "GET /repos/octo-org/hello/hooks/99/deliveries",
          "POST /repos/octo-org/hello/hooks/99/deliveries/21/attempts",
        ]);
        assertNoSecrets(tokenWorker.output(), "token worker");
        assert.ok(!tokenWorker.output().includes("ghp_t0ken_for_tests"), "the token is not logged");
      } finally {
        await repoMock.close();
      }
    });
    await check("rust worker: no app token, private key or secret in the logs of the redelivery runs", () => {
      const output = rust.output();
      assertNoSecrets(output, "rust worker");
      assert.ok(!output.includes("eyJhbGciOiJSUzI1NiIs"), "an app JWT appeared in the logs");
      const keyBody = privateKey.split("\n").slice(1, -2).join("");
      for (const line of privateKey.split("\n").slice(1, -2)) assert.ok(!output.includes(line), "a line of the private key appeared in the logs");
      assert.ok(keyBody.length > 1000);
    });
  } catch (error) {
    console.error(`--- wrangler output ---\n${rust.output().slice(-4000)}\n${tokenWorker?.output().slice(-3000) ?? ""}`);
    throw error;
  } finally {
    await rust.stop();
    await tokenWorker?.stop();
    await mock.close();
    await listener.close();
    rmSync(state, { recursive: true, force: true });
  }
}

async function wasiComponent() {
  const listener = await startListener(plannedAnswers());
  const wasi = await startWasi({ FORWARD_URL: listener.url });
  if (!wasi) {
    console.log("SKIPPED: the WASI-HTTP component (no wasmtime at $WASMTIME or in ~/.cargo/bin; tests/worker.sh installs it)");
    await listener.close();
    return;
  }
  const rust = await startRust({ FORWARD_URL: listener.url });
  try {
    await check("wasi component: health answers 200 with the build version", async () => {
      const response = await fetch(`${wasi.url}/health`);
      assert.equal(response.status, 200);
      assert.equal(await response.text(), `{"status":"ok","version":"strata-worker-wasi/${VERSION}"}`);
    });
    await check("wasi component: every example delivery answered 200 and forwarded byte for byte", async () => {
      console.log(`   ${await examplesAreForwarded(wasi.url, listener)} deliveries`);
    });
    await check("wasi component: refusals answer exactly like the Rust worker and are never forwarded", async () => {
      await refusalsAreNeverForwarded(wasi.url, listener, { compareWith: rust.url, expectContinue: true });
    });
    await check("wasi component: forward retries are bounded and logged", () =>
      retriesAreBoundedAndLogged(wasi.url, listener, wasi.output),
    );
    await check("wasi component: no secret in the logs", () => assertNoSecrets(wasi.output(), "wasi component"));
  } catch (error) {
    console.error(`--- wasmtime output ---\n${wasi.output().slice(-3000)}`);
    throw error;
  } finally {
    await wasi.stop();
    await rust.stop();
    await listener.close();
  }
}

const only = process.argv[2];
if (!only || only === "worker") {
  await rustWorker();
  await rustWorkerFiltered();
  await rustWorkerMisconfigured();
  await rustWorkerWithQueue();
  await rustWorkerDeduplicates();
  await rustWorkerRedelivers();
}
if (only === "redeliver") await rustWorkerRedelivers();
if (only === "dedup") await rustWorkerDeduplicates();
if (!only || only === "wasi") await wasiComponent();
console.log(`${passed} checks passed`);
