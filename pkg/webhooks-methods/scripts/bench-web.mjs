// npm run bench:web: the universal build of @strata/webhooks-methods side by
// side with @octokit/webhooks-methods' web build, in the runtimes that get
// them — headless Chromium (a page importing both as ES modules) and workerd
// (`wrangler dev`, each package resolved through its own export conditions).
// Both sign and verify 1 KB and 25 KB payloads. Rounds alternate between the
// two packages; each row reports median operations per second and the
// median of the per-round ratios (paired rounds cancel the machine's drift).
//
// Chromium times rounds in the page with performance.now(). workerd's clock
// does not advance while a request computes, so there Node times requests
// that each run one round of operations.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { servePage, startChromium } from "../../shared/browser.mjs";
import { createProject } from "../../shared/harness.mjs";
import { startWrangler } from "../../shared/wrangler.mjs";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ROUNDS = Number(process.env.BENCH_ROUNDS || 9);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS || 300);
const SECRET = "benchmark secret";

// The rows, as source shared by the page and the worker: `payloadOf(bytes)`
// and `rows(methods)`, each row an async operation.
const ROWS_SOURCE = `
const SECRET = ${JSON.stringify(SECRET)};
function payloadOf(bytes) {
  const skeleton = JSON.stringify({ action: "opened", data: "" });
  return JSON.stringify({ action: "opened", data: "x".repeat(bytes - skeleton.length) });
}
const small = payloadOf(1024);
const large = payloadOf(25 * 1024);
export async function rows(methods) {
  const smallSignature = await methods.sign(SECRET, small);
  const largeSignature = await methods.sign(SECRET, large);
  return {
    "sign 1 KB": () => methods.sign(SECRET, small),
    "verify 1 KB": () => methods.verify(SECRET, small, smallSignature),
    "sign 25 KB": () => methods.sign(SECRET, large),
    "verify 25 KB": () => methods.verify(SECRET, large, largeSignature),
  };
}
export async function runFor(operation, ms, now) {
  let operations = 0;
  const start = now();
  let end = start;
  while (end - start < ms) {
    for (let i = 0; i < 10; i++) await operation();
    operations += 10;
    end = now();
  }
  return operations / ((end - start) / 1000);
}
export async function runCount(operation, count) {
  for (let i = 0; i < count; i++) await operation();
}
`;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const format = (value) => Math.round(value).toLocaleString("en-US");

function table(runtime, results) {
  console.log(`\n${runtime}: ${ROUNDS} alternating rounds per row\n`);
  console.log("| row | @strata ops/s | @octokit ops/s | ratio (median of rounds) |");
  console.log("|---|---:|---:|---:|");
  for (const [name, { ours, theirs }] of Object.entries(results)) {
    const ratios = ours.map((value, index) => value / theirs[index]);
    console.log(`| ${name} | ${format(median(ours))} | ${format(median(theirs))} | ${median(ratios).toFixed(2)}x |`);
  }
}

const PAGE = `<!doctype html><meta charset="utf-8"><script type="module">
import * as ours from "/ours.mjs";
import * as theirs from "/theirs.mjs";
import { rows, runFor } from "/rows.mjs";
const now = () => performance.now();
const mine = await rows(ours);
const other = await rows(theirs);
const results = {};
for (const name of Object.keys(mine)) {
  for (let i = 0; i < 200; i++) { await mine[name](); await other[name](); }
  results[name] = { ours: [], theirs: [] };
  for (let round = 0; round < ${ROUNDS}; round++) {
    results[name].ours.push(await runFor(mine[name], ${ROUND_MS}, now));
    results[name].theirs.push(await runFor(other[name], ${ROUND_MS}, now));
  }
}
await fetch("/result", { method: "POST", body: JSON.stringify(results) });
</script>`;

async function inChromium(project) {
  const page = await servePage({
    "/": ["text/html", PAGE],
    "/rows.mjs": ["text/javascript", ROWS_SOURCE],
    "/ours.mjs": ["text/javascript", readFileSync(join(project, "node_modules", "@strata", "webhooks-methods", "dist", "index.mjs"))],
    "/theirs.mjs": ["text/javascript", readFileSync(join(project, "node_modules", "@octokit", "webhooks-methods", "dist-web", "index.js"))],
  });
  const browser = startChromium(page.url);
  try {
    table(`headless Chromium (${process.env.STRATA_CHROMIUM || "chromium"}), main thread`, JSON.parse(await page.result));
  } finally {
    await browser.stop();
    page.close();
  }
}

const WORKER = `import * as ours from "@strata/webhooks-methods";
import * as theirs from "@octokit/webhooks-methods";
import { rows, runCount } from "./rows.mjs";
let prepared;
export default {
  async fetch(request) {
    prepared ??= { ours: await rows(ours), theirs: await rows(theirs) };
    const url = new URL(request.url);
    const operation = prepared[url.searchParams.get("impl")][url.searchParams.get("row")];
    await runCount(operation, Number(url.searchParams.get("count")));
    return new Response("done");
  },
};
`;

async function inWorkerd(project) {
  const dir = join(project, "bench-worker");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "index.js"), WORKER);
  writeFileSync(join(dir, "rows.mjs"), ROWS_SOURCE);
  writeFileSync(join(dir, "wrangler.toml"), 'name = "strata-bench"\nmain = "index.js"\ncompatibility_date = "2025-09-01"\n');
  const worker = await startWrangler({ wrangler: join(project, "node_modules", ".bin", "wrangler"), cwd: dir });
  try {
    const call = async (impl, row, count) => {
      const started = performance.now();
      const response = await fetch(`${worker.url}/?impl=${impl}&row=${encodeURIComponent(row)}&count=${count}`);
      if ((await response.text()) !== "done") throw new Error(`the worker failed: ${response.status}`);
      return performance.now() - started;
    };
    const results = {};
    for (const row of ["sign 1 KB", "verify 1 KB", "sign 25 KB", "verify 25 KB"]) {
      // A round of about ROUND_MS for the slower of the two.
      await call("ours", row, 200);
      const probe = Math.max(await call("ours", row, 200), await call("theirs", row, 200));
      const count = Math.max(50, Math.round((200 * ROUND_MS) / probe));
      results[row] = { ours: [], theirs: [] };
      for (let round = 0; round < ROUNDS; round++) {
        results[row].ours.push(count / ((await call("ours", row, count)) / 1000));
        results[row].theirs.push(count / ((await call("theirs", row, count)) / 1000));
      }
    }
    table("workerd (wrangler dev), timed per request by Node", results);
  } finally {
    await worker.stop();
  }
}

const { dir, cleanup } = createProject("strata-webhooks-methods-bench", [pkgDir], ["@octokit/webhooks-methods@6", "wrangler@4"]);
try {
  const { version } = JSON.parse(readFileSync(join(dir, "node_modules", "@octokit", "webhooks-methods", "package.json"), "utf8"));
  console.log(`@octokit/webhooks-methods ${version} (dist-web, WebCrypto) against this build's universal entry`);
  await inChromium(dir);
  await inWorkerd(dir);
} finally {
  cleanup();
}
