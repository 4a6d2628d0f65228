// The package from require(): same API, same results as the ESM entry.
const { test } = require("node:test");
const assert = require("node:assert/strict");

const { endpoint, VERSION } = require("@strata/endpoint");

test("require() gives the endpoint function with its helpers", () => {
  assert.equal(typeof endpoint, "function");
  assert.equal(typeof endpoint.defaults, "function");
  assert.equal(typeof endpoint.merge, "function");
  assert.equal(typeof endpoint.parse, "function");
  assert.equal(VERSION, require("@strata/endpoint/package.json").version);
});

test("require() results equal the ESM entry's", async () => {
  const esm = await import("@strata/endpoint");
  const args = ["GET /repos/{owner}/{repo}/issues{?state}", { owner: "o", repo: "r", state: "open", labels: "a" }];
  assert.deepStrictEqual(endpoint(...args), esm.endpoint(...args));
  assert.equal(endpoint(...args).url, "https://api.github.com/repos/o/r/issues?state=open&labels=a");
});
