// This package against @octokit/endpoint itself: the behaviour cases, every
// template of the official RFC 6570 test suite, and arbitrary inputs
// (fast-check). Drop-in means the same output, or an error where upstream
// throws one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import fc from "fast-check";
import { endpoint as upstream } from "@octokit/endpoint";
import { endpoint as ours } from "@strata/endpoint";
import { cases, USER_AGENT_PLACEHOLDER } from "./cases.mjs";

const suiteDir = process.env.URITEMPLATE_TEST_DIR;
const plain = (value) => JSON.parse(JSON.stringify(value));

// Where upstream throws a TypeError because it calls a string method on a
// non-string value (a number `q`, numbers in a `{+list}`), this package
// converts the value with String() instead. The expectation there is
// upstream's result for the same call with the values converted.
function stringified(value) {
  if (value === null || value === undefined) return value;
  if (Array.isArray(value)) return value.map((item) => (item === null || item === undefined ? item : String(item)));
  if (typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, item === null || item === undefined ? item : String(item)]));
  }
  return String(value);
}

const RESERVED = new Set(["method", "baseUrl", "url", "headers", "request", "mediaType"]);
function withStringValues(options) {
  const converted = (key, value) => (RESERVED.has(key) ? value : key === "q" ? String(value) : stringified(value));
  return Object.fromEntries(Object.entries(options).map(([key, value]) => [key, converted(key, value)]));
}

function expectation(...args) {
  const first = outcome(upstream, ...args);
  if (first.error !== "TypeError") return first;
  const last = args.length - 1;
  return outcome(upstream, ...args.slice(0, last), withStringValues(args[last]));
}

function outcome(endpoint, ...args) {
  try {
    const result = plain(endpoint(...args));
    if (result.headers) delete result.headers["user-agent"];
    return { result };
  } catch (error) {
    return { error: error instanceof Error ? error.constructor.name : typeof error };
  }
}

for (const { name, route, options, expected } of cases) {
  test(`upstream agrees: ${name}`, () => {
    const result = plain(upstream(route, structuredClone(options)));
    assert.match(result.headers["user-agent"], /^octokit-endpoint\.js\//);
    assert.equal(expected.headers["user-agent"], USER_AGENT_PLACEHOLDER);
    result.headers["user-agent"] = USER_AGENT_PLACEHOLDER;
    assert.deepStrictEqual(result, expected);
  });
}

function suiteTemplates() {
  const files = ["spec-examples.json", "spec-examples-by-section.json", "extended-tests.json", "negative-tests.json"];
  const all = [];
  for (const file of files) {
    const groups = JSON.parse(readFileSync(join(suiteDir, file), "utf8"));
    for (const [group, { variables, testcases }] of Object.entries(groups)) {
      for (const [template] of testcases) all.push({ file, group, template, variables });
    }
  }
  return all;
}

test("every RFC 6570 suite template expands exactly like upstream (GET and POST)", { skip: !suiteDir && "URITEMPLATE_TEST_DIR not set" }, () => {
  const templates = suiteTemplates();
  let compared = 0;
  for (const { file, group, template, variables } of templates) {
    for (const method of ["GET", "POST"]) {
      const options = { method, url: template, ...variables };
      assert.deepStrictEqual(outcome(ours, options), expectation(options), `${file} / ${group} / ${method} ${template}`);
      compared++;
    }
  }
  assert.ok(templates.length >= 270, `only ${templates.length} suite cases found`);
  console.log(`# compared ${templates.length} suite templates x 2 methods = ${compared} requests`);
});

const name = fc.stringMatching(/^[a-z_][a-z0-9_]{0,6}$/);
const scalar = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.boolean(), fc.constant(""), fc.constant(null));
const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.constant(null)), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.dictionary(name, fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxKeys: 3, noNullPrototype: true }) },
);
const operator = fc.constantFrom("", "+", "#", ".", "/", ";", "?", "&");
const modifier = fc.constantFrom("", "", "*", ":1", ":3", ":0");
const expression = fc
  .tuple(operator, fc.array(fc.tuple(name, modifier), { minLength: 1, maxLength: 3 }))
  .map(([op, vars]) => `{${op}${vars.map(([n, m]) => n + m).join(",")}}`);
const literal = fc.stringMatching(/^[a-zA-Z0-9/_.%:{} -]{0,8}$/);
const template = fc.array(fc.oneof(expression, literal), { minLength: 1, maxLength: 5 }).map((parts) => "/" + parts.join(""));

test("arbitrary templates and parameters give upstream's result (fast-check)", () => {
  fc.assert(
    fc.property(
      fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"),
      template,
      fc.dictionary(name, value, { maxKeys: 6, noNullPrototype: true }),
      fc.constantFrom("", "raw", "diff", "html+json"),
      (method, url, parameters, format) => {
        const options = { ...parameters, mediaType: { format } };
        assert.deepStrictEqual(outcome(ours, `${method} ${url}`, options), expectation(`${method} ${url}`, options));
      },
    ),
    { numRuns: 3000, seed: 20261122 },
  );
});

test("arbitrary accept headers and previews are rewritten like upstream (fast-check)", () => {
  const word = fc.stringMatching(/^[a-z0-9-]{1,8}$/);
  const range = fc.oneof(
    fc.constant("application/vnd.github.v3+json"),
    word.map((w) => `application/vnd.github.${w}-preview+json`),
    fc.tuple(word, fc.constantFrom("", ".v3", ".v3.raw", ".raw"), fc.constantFrom("", "+json")).map(([w, v, j]) => `application/vnd.${w}${v}${j}`),
    fc.constantFrom("text/html", "application/octet-stream", "*/*"),
  );
  fc.assert(
    fc.property(
      fc.array(range, { minLength: 1, maxLength: 3 }).map((ranges) => ranges.join(",")),
      fc.constantFrom("", "raw", "diff", "text+json"),
      fc.array(word, { maxLength: 3 }),
      fc.constantFrom("/graphql", "/repos", "https://ghe.example.com/api/graphql"),
      (accept, format, previews, url) => {
        const options = { headers: { accept }, mediaType: { format, previews } };
        assert.deepStrictEqual(outcome(ours, `POST ${url}`, options), expectation(`POST ${url}`, options));
      },
    ),
    { numRuns: 2000, seed: 20261122 },
  );
});
