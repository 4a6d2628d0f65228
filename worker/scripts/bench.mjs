// Throughput and latency of verified deliveries through `wrangler dev`
// (workerd on 127.0.0.1): the Rust Worker (strata-worker) side by side with
// the JS Worker on @strata/webhooks' web middleware, same variables, same
// forward target, alternating rounds in one run. Also the gzip size of each
// Worker's upload against Cloudflare's 3 MB limit.
//   node scripts/bench.mjs [seconds per round, default 10] [rounds, default 3]
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { startWrangler } from "../../pkg/shared/wrangler.mjs";
import { exampleDeliveries, githubHeaders, startListener } from "./lib.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", ".bin", "wrangler");
const SECRET = "bench-secret";
const seconds = Number(process.argv[2] || 10);
const rounds = Number(process.argv[3] || 3);
const CONCURRENCY = 16;

function secretsFile() {
  const file = join(mkdtempSync(join(tmpdir(), "strata-bench-")), "secrets.env");
  writeFileSync(file, `GITHUB_WEBHOOK_SECRET=${SECRET}\n`);
  return file;
}

/** Keeps CONCURRENCY requests in flight for `ms`; returns rps and latency percentiles. */
async function load(url, delivery, ms) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const headers = { ...githubHeaders(delivery, SECRET), "content-length": String(delivery.body.length) };
  const latencies = [];
  let failures = 0;
  const end = performance.now() + ms;
  const one = () =>
    new Promise((resolve) => {
      const started = performance.now();
      const call = request(url, { method: "POST", headers, agent }, (response) => {
        response.resume();
        response.on("end", () => {
          if (response.statusCode === 200) latencies.push(performance.now() - started);
          else failures++;
          resolve();
        });
      });
      call.on("error", () => {
        failures++;
        resolve();
      });
      call.end(delivery.body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) await one();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { rps: latencies.length / elapsed, p50: at(0.5), p99: at(0.99), failures };
}

function gzipKb(files) {
  return files.reduce((sum, file) => sum + gzipSync(readFileSync(file), { level: 9 }).length, 0) / 1024;
}

function sizes() {
  const rust = gzipKb([join(root, "build", "index.js"), join(root, "build", "index_bg.wasm")]);
  const out = mkdtempSync(join(tmpdir(), "strata-bundle-"));
  execFileSync(wrangler, ["deploy", "--dry-run", "--outdir", out], {
    cwd: join(root, "js"),
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
    stdio: "ignore",
  });
  const jsFiles = readdirSync(out)
    .filter((name) => !name.endsWith(".map") && statSync(join(out, name)).isFile())
    .map((name) => join(out, name));
  return { rust, js: gzipKb(jsFiles) };
}

const listener = await startListener();
const secrets = secretsFile();
const config = join(root, "build", "wrangler.bench.toml");
writeFileSync(config, 'name = "strata-receiver-bench"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n');

const examples = exampleDeliveries();
const pick = (name, predicate) => examples.find((entry) => entry.name === name && predicate(JSON.parse(entry.body)));
const largest = examples.reduce((a, b) => (b.body.length > a.body.length ? b : a));
const payloads = [
  ["issues.opened", pick("issues", (payload) => payload.action === "opened")],
  [`${largest.name} (largest example)`, largest],
];
// "verify only": EVENTS lets no benchmark delivery through, so each request is
// routed, read, verified and parsed, and nothing is forwarded.
const modes = [
  ["verify + forward", []],
  ["verify only", ["--var", "EVENTS:ping"]],
];
const median = (list, key) => list.map((entry) => entry[key]).sort((a, b) => a - b)[Math.floor(list.length / 2)];
const results = [];
try {
  for (const [mode, extra] of modes) {
    const vars = ["--env-file", secrets, "--var", `FORWARD_URL:${listener.url}`, ...extra];
    const rust = await startWrangler({ wrangler, cwd: root, args: ["--config", config, ...vars] });
    const js = await startWrangler({ wrangler, cwd: join(root, "js"), args: vars });
    try {
      for (const [label, delivery] of payloads) {
        const totals = { rust: [], js: [] };
        await load(`${rust.url}/api/github/webhooks`, delivery, 1000); // warm-up
        await load(`${js.url}/api/github/webhooks`, delivery, 1000);
        for (let round = 0; round < rounds; round++) {
          totals.rust.push(await load(`${rust.url}/api/github/webhooks`, delivery, seconds * 1000));
          totals.js.push(await load(`${js.url}/api/github/webhooks`, delivery, seconds * 1000));
        }
        const row = (side) => ({
          rps: median(totals[side], "rps"),
          p50: median(totals[side], "p50"),
          p99: median(totals[side], "p99"),
          failures: totals[side].reduce((sum, entry) => sum + entry.failures, 0),
        });
        results.push({ mode, label, bytes: delivery.body.length, rust: row("rust"), js: row("js") });
      }
    } finally {
      await rust.stop();
      await js.stop();
    }
  }
} finally {
  await listener.close();
}

console.log(`| mode | payload | Rust worker req/s | JS worker req/s | ratio | Rust p50 / p99 ms | JS p50 / p99 ms |`);
console.log(`|---|---|---:|---:|---:|---:|---:|`);
for (const { mode, label, bytes, rust: r, js: j } of results) {
  console.log(
    `| ${mode} | ${label}, ${(bytes / 1024).toFixed(1)} KB | ${r.rps.toFixed(0)} | ${j.rps.toFixed(0)} | ${(r.rps / j.rps).toFixed(2)}× | ` +
      `${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} | ${j.p50.toFixed(1)} / ${j.p99.toFixed(1)} |`,
  );
  if (r.failures || j.failures) console.log(`   failures: rust ${r.failures}, js ${j.failures}`);
}
const size = sizes();
console.log(`\nupload size, gzip -9: Rust worker ${size.rust.toFixed(1)} KB, JS worker ${size.js.toFixed(1)} KB (Cloudflare limit: 3 MB = 3072 KB)`);
console.log(`(${rounds} alternating rounds of ${seconds} s, ${CONCURRENCY} connections, medians)`);
