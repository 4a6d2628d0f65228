// How should a call cross into WebAssembly? Builds the benchmark crate
// wasm/benches/crossing (strata-wasm linked in) and renders the same URL (the GET row of
// bench.mjs: 4 template values, 2 query pairs) three ways, each including
// its JavaScript-side encoding:
//   wire  - the length-prefixed string the package uses (one &str);
//   json  - JSON.stringify + serde_json in Rust (one &str);
//   value - a JS object read field by field through serde-wasm-bindgen.
// It builds its own module; the package's shipped wasm is left as it is.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { wireString, wireStrings, wireValue } from "../../shared/wire.js";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = mkdtempSync(join(tmpdir(), "strata-crossing-"));
execFileSync("cargo", ["build", "-p", "strata-wasm-crossing", "--target", "wasm32-unknown-unknown", "--profile", "wasm"], { cwd: pkgDir, stdio: "inherit" });
const metadata = JSON.parse(execFileSync("cargo", ["metadata", "--format-version", "1", "--no-deps"], { cwd: pkgDir }).toString());
const wasmFile = join(metadata.target_directory, "wasm32-unknown-unknown", "wasm", "strata_wasm_crossing.wasm");
execFileSync(process.env.WASM_BINDGEN_BIN || join(homedir(), ".cargo", "bin", "wasm-bindgen"), ["--target", "web", "--out-dir", out, wasmFile]);
const glue = await import(pathToFileURL(join(out, "strata_wasm_crossing.js")).href);
glue.initSync({ module: readFileSync(join(out, "strata_wasm_crossing_bg.wasm")) });
rmSync(out, { recursive: true, force: true });

const plan = glue.endpoint_plan("GET", "/repos/{owner}/{repo}/issues{?state,per_page}");
const index = Number(plan.slice(0, plan.indexOf(":")));
const experimentIndex = glue.experiment_plan("GET", "/repos/{owner}/{repo}/issues{?state,per_page}");
const params = { owner: "octokit", repo: "endpoint.js", state: "open", per_page: 100 };
const query = [["labels", "bug,ui"], ["sort", "created"]];
const lookupNames = ["owner", "repo", "state", "per_page"];
const baseUrl = "https://api.github.com";

const ways = {
  wire: () => {
    let payload = wireString(baseUrl) + "n" + wireString("") + wireStrings([]);
    for (const name of lookupNames) payload += wireValue(params[name]);
    for (const [name, value] of query) payload += wireString(name) + wireString(value);
    return glue.endpoint_url(index, payload);
  },
  json: () => {
    const lookups = lookupNames.map((name) => (typeof params[name] === "number" ? String(params[name]) : params[name]));
    return glue.experiment_url_json(experimentIndex, JSON.stringify({ base_url: baseUrl, accept: null, format: "", previews: [], lookups, query }));
  },
  value: () => {
    const lookups = lookupNames.map((name) => (typeof params[name] === "number" ? String(params[name]) : params[name]));
    return glue.experiment_url_value(experimentIndex, { base_url: baseUrl, accept: null, format: "", previews: [], lookups, query });
  },
};

const expected = "0https://api.github.com/repos/octokit/endpoint.js/issues?state=open&per_page=100&labels=bug%2Cui&sort=created";
for (const [name, way] of Object.entries(ways)) {
  if (way() !== expected) throw new Error(`${name} rendered ${way()}`);
}
function opsPerSecond(fn) {
  for (let i = 0; i < 20000; i++) fn();
  let operations = 0;
  const start = performance.now();
  while (performance.now() - start < 300) {
    for (let i = 0; i < 500; i++) fn();
    operations += 500;
  }
  return operations / ((performance.now() - start) / 1000);
}
const results = Object.fromEntries(Object.keys(ways).map((name) => [name, []]));
for (let round = 0; round < 5; round++) for (const [name, way] of Object.entries(ways)) results[name].push(opsPerSecond(way));
const median = (values) => values.sort((a, b) => a - b)[2];
console.log("| crossing | ops/s (median of 5) | vs wire |\n|---|---:|---:|");
const wire = median(results.wire);
for (const [name, values] of Object.entries(results)) {
  const value = median(values);
  console.log(`| ${name} | ${Math.round(value).toLocaleString("en-US")} | ${(value / wire).toFixed(2)}x |`);
}
