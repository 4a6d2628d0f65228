// The JavaScript receiver's retry rule against core's table of cases.
// Run: node --test worker/js/retry.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { FIRST_RETRY_DELAY_MS, nextStep } from "./retry.js";

const table = JSON.parse(readFileSync(new URL("../../tests/data/retry/cases.json", import.meta.url), "utf8"));

test("the retry rule follows core's table", () => {
  assert.equal(FIRST_RETRY_DELAY_MS, table.firstRetryDelayMs);
  assert.ok(table.cases.length >= 20);
  for (const { attempt, number, max, next } of table.cases) {
    if (attempt === "sent") continue; // a queue: the JavaScript receiver only forwards over HTTP
    const status = attempt === "unreachable" ? 0 : attempt;
    assert.equal(nextStep(status, number, max), next, JSON.stringify({ attempt, number, max }));
  }
});
