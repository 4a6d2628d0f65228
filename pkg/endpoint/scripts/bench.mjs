// npm run bench: this package side by side with @octokit/endpoint in one
// process. Each row alternates short rounds of the two (so machine noise hits
// both alike) and reports median operations per second, their ratio and the
// spread of the per-round ratios (BENCH_ROUNDS, default 7); then
// the gzip -9 size of what a user loads. Results go to BENCHMARKS.md.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { endpoint as upstream } from "@octokit/endpoint";
import { endpoint as ours } from "../dist/index.mjs";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const ROUND_MS = Number(process.env.BENCH_ROUND_MS || 200);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 7);

const rows = {
  "GET route with 6 parameters": (endpoint) => () =>
    endpoint("GET /repos/{owner}/{repo}/issues{?state,per_page}", { owner: "octokit", repo: "endpoint.js", state: "open", per_page: 100, labels: "bug,ui", sort: "created" }),
  "POST with body and mediaType": (endpoint) => () =>
    endpoint("POST /repos/{owner}/{repo}/issues", { owner: "octokit", repo: "endpoint.js", title: "Found a bug", body: "It crashes", labels: ["bug"], assignees: ["octocat"], mediaType: { format: "raw" } }),
  "3-level defaults() chain, then a call": (endpoint) => () =>
    endpoint
      .defaults({ baseUrl: "https://ghe.example.com/api/v3" })
      .defaults({ headers: { authorization: "token secret" } })
      .defaults({ per_page: 100 })("GET /orgs/{org}/repos", { org: "octokit" }),
  "call through a prebuilt 3-level chain": (endpoint) => {
    const chained = endpoint.defaults({ baseUrl: "https://ghe.example.com/api/v3" }).defaults({ headers: { authorization: "token secret" } }).defaults({ per_page: 100 });
    return () => chained("GET /orgs/{org}/repos", { org: "octokit" });
  },
  "endpoint.merge": (endpoint) => () => endpoint.merge("GET /repos/{owner}/{repo}/issues", { owner: "octokit", repo: "endpoint.js", headers: { "X-Custom": "1" } }),
  "endpoint.parse of merged options": (endpoint) => {
    const options = endpoint.merge("GET /repos/{owner}/{repo}/issues{?state}", { owner: "octokit", repo: "endpoint.js", state: "open", per_page: 100 });
    return () => endpoint.parse(options);
  },
};
// BENCH_ROWS=merge,parse runs only the rows whose names contain one of the words.
const only = process.env.BENCH_ROWS ? process.env.BENCH_ROWS.split(",") : null;

function round(fn) {
  let operations = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ROUND_MS) {
    for (let i = 0; i < 500; i++) fn();
    operations += 500;
    now = performance.now();
  }
  return operations / ((now - start) / 1000);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const format = (value) => Math.round(value).toLocaleString("en-US");

console.log(`node ${process.version}, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per package and row\n`);
console.log("| row | @strata/endpoint ops/s | @octokit/endpoint ops/s | ratio | per-round ratios, min–max |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, make] of Object.entries(rows)) {
  if (only && !only.some((word) => name.includes(word))) continue;
  const mine = make(ours);
  const theirs = make(upstream);
  for (let i = 0; i < 20000; i++) {
    mine();
    theirs();
  }
  const a = [];
  const b = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(round(mine));
    b.push(round(theirs));
  }
  const ratios = a.map((value, i) => value / b[i]);
  const spread = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×`;
  console.log(`| ${name} | ${format(median(a))} | ${format(median(b))} | ${(median(a) / median(b)).toFixed(2)}× | ${spread} |`);
}

const require = createRequire(import.meta.url);
const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;
const upstreamDir = join(pkgDir, "node_modules", "@octokit", "endpoint");
const userAgentFile = require.resolve("universal-user-agent");
const upstreamBytes = gz(join(upstreamDir, "dist-bundle", "index.js")) + gz(userAgentFile);
console.log(`\nsize, gzip -9: @strata/endpoint dist/index.mjs ${gz(join(pkgDir, "dist", "index.mjs"))} B (wasm embedded), ` +
  `dist/index.cjs ${gz(join(pkgDir, "dist", "index.cjs"))} B; @octokit/endpoint dist-bundle/index.js + universal-user-agent ${upstreamBytes} B`);
