// Behaviour of the packed package, imported as ESM from a fresh project.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

import { endpoint, VERSION, isPlainObject } from "@strata/endpoint";
import * as endpointModule from "@strata/endpoint";

/** The package's test hook, registered only because test/hooks.mjs was preloaded. */
function panicHook() {
  const hooks = globalThis[Symbol.for("strata.testHooks")].filter((hook) => hook.name === "@strata/endpoint");
  assert.equal(hooks.length, 1);
  return hooks[0].panic;
}
import { cases, USER_AGENT_PLACEHOLDER } from "./cases.mjs";

const require = createRequire(import.meta.url);
const packageJson = JSON.parse(readFileSync(require.resolve("@strata/endpoint/package.json"), "utf8"));
const userAgent = `strata-endpoint.js/${packageJson.version} Node.js/${process.version.slice(1)} (${process.platform}; ${process.arch})`;

function withUserAgent(expected) {
  const copy = structuredClone(expected);
  if (copy.headers["user-agent"] === USER_AGENT_PLACEHOLDER) copy.headers["user-agent"] = userAgent;
  return copy;
}

for (const { name, route, options, expected } of cases) {
  test(name, () => {
    assert.deepStrictEqual(endpoint(route, structuredClone(options)), withUserAgent(expected));
  });
}

test("VERSION is the package version and part of the default user-agent", () => {
  assert.equal(VERSION, packageJson.version);
  assert.equal(endpoint.DEFAULTS.headers["user-agent"], userAgent);
});

test("DEFAULTS are GitHub's", () => {
  assert.deepStrictEqual(endpoint.DEFAULTS, {
    method: "GET",
    baseUrl: "https://api.github.com",
    headers: { accept: "application/vnd.github.v3+json", "user-agent": userAgent },
    mediaType: { format: "" },
  });
});

test("defaults() cascades and each layer is a new function", () => {
  const enterprise = endpoint.defaults({ baseUrl: "https://ghe.example.com/api/v3", headers: { Authorization: "token a" } });
  const paged = enterprise.defaults({ per_page: 100, headers: { "X-Extra": "1" } });
  assert.notEqual(enterprise, endpoint);
  assert.notEqual(paged, enterprise);
  assert.equal(endpoint.DEFAULTS.baseUrl, "https://api.github.com");
  assert.equal(paged.DEFAULTS.baseUrl, "https://ghe.example.com/api/v3");
  assert.deepStrictEqual(paged("GET /orgs/{org}/repos", { org: "acme" }), {
    method: "GET",
    url: "https://ghe.example.com/api/v3/orgs/acme/repos?per_page=100",
    headers: { accept: "application/vnd.github.v3+json", "user-agent": userAgent, authorization: "token a", "x-extra": "1" },
  });
});

test("merge() keeps the template and drops undefined values", () => {
  assert.deepStrictEqual(endpoint.merge("POST /repos/{owner}/{repo}/issues", { owner: "o", repo: undefined, headers: { "X-A": undefined, "X-B": "b" } }), {
    method: "POST",
    baseUrl: "https://api.github.com",
    url: "/repos/{owner}/{repo}/issues",
    headers: { accept: "application/vnd.github.v3+json", "user-agent": userAgent, "x-b": "b" },
    mediaType: { format: "" },
    owner: "o",
  });
});

test("merge() replaces arrays and merges plain objects deeply", () => {
  const custom = endpoint.defaults({ mediaType: { previews: ["a"] }, request: { hook: "x" } });
  const merged = custom.merge({ url: "/x", mediaType: { previews: ["b"] }, request: { timeout: 1 } });
  assert.deepStrictEqual(merged.mediaType, { format: "", previews: ["b"] });
  assert.deepStrictEqual(merged.request, { hook: "x", timeout: 1 });
});

test("graphql previews of defaults and options are combined without -preview", () => {
  const custom = endpoint.defaults({ mediaType: { previews: ["a-preview", "b"] } });
  assert.deepStrictEqual(custom.merge("POST /graphql", { mediaType: { previews: ["b", "c-preview"] } }).mediaType.previews, ["a", "b", "c"]);
});

test("parse() is stateless and equals endpoint()", () => {
  const merged = endpoint.merge("GET /repos/{owner}/{repo}", { owner: "o", repo: "r", page: 2 });
  assert.deepStrictEqual(endpoint.parse(merged), endpoint("GET /repos/{owner}/{repo}", { owner: "o", repo: "r", page: 2 }));
  assert.deepStrictEqual(endpoint.parse(merged), endpoint.parse(merged));
});

test("request values keep their identity", () => {
  const agent = { keepAlive: true };
  const data = new Uint8Array([1, 2, 3]);
  const options = endpoint("POST /x", { data, request: { agent } });
  assert.equal(options.request.agent, agent);
  assert.equal(options.body, data);
});

test("a body value is never copied or converted", () => {
  const files = { "a.txt": { content: "x".repeat(100000) } };
  const options = endpoint("POST /gists", { files, public: false });
  assert.equal(options.body.files, files);
  assert.equal(options.body.public, false);
});

test("a parse without a method is a TypeError", () => {
  assert.throws(() => endpoint.parse({ url: "/x" }), TypeError);
});

test("a prefix cutting a surrogate pair throws a URIError-like Error, and the package keeps working", () => {
  assert.throws(() => endpoint("GET /x/{v:1}", { v: "😀" }), /URI malformed/);
  assert.equal(endpoint("GET /x/{v:2}", { v: "😀" }).url, "https://api.github.com/x/%F0%9F%98%80?v=%F0%9F%98%80");
});

test("more distinct routes than the plan cache holds still give exact results", () => {
  for (let i = 0; i < 2100; i++) {
    assert.equal(endpoint(`GET /r${i}/{id}`, { id: i }).url, `https://api.github.com/r${i}/${i}`);
  }
  assert.equal(endpoint("GET /r5/{id}", { id: "again" }).url, "https://api.github.com/r5/again");
});

test("isPlainObject", () => {
  assert.equal(isPlainObject({}), true);
  assert.equal(isPlainObject(Object.create(null)), true);
  assert.equal(isPlainObject([]), false);
  assert.equal(isPlainObject(new Date()), false);
  assert.equal(isPlainObject(null), false);
  class Foo {}
  assert.equal(isPlainObject(new Foo()), false);
});

test("a Rust panic becomes a thrown Error, and the package keeps working with a fresh instance", () => {
  assert.equal(endpoint("GET /before/{id}", { id: 1 }).url, "https://api.github.com/before/1");
  assert.equal("__testPanic" in endpointModule, false, "no test-only export");
  const __testPanic = panicHook();
  assert.throws(() => __testPanic("boom"), (error) => {
    assert.ok(error instanceof Error && !(error instanceof WebAssembly.RuntimeError));
    assert.match(error.message, /^\[strata\] internal error in strata_test_panic: .*strata_test_panic: boom.*\(the WebAssembly instance was replaced\)$/s);
    return true;
  });
  // The plan of /before/{id} lived in the replaced instance: it is planned again.
  assert.equal(endpoint("GET /before/{id}", { id: 2 }).url, "https://api.github.com/before/2");
  assert.equal(endpoint("POST /after", { a: 1 }).body.a, 1);
});
