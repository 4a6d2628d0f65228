const { test } = require("node:test");
const assert = require("node:assert/strict");

test("require() gives sign, verify and verifyWithFallback", async () => {
  const methods = require("@strata/webhooks-methods");
  assert.equal(await methods.sign("mysecret", '{"foo":"bar"}'), "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3");
  assert.equal(await methods.verifyWithFallback("x", '{"foo":"bar"}', await methods.sign("y", '{"foo":"bar"}'), ["y"]), true);
});
