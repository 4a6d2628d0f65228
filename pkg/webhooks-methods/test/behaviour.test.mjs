// Behaviour of the packed package, and agreement with @octokit/webhooks-methods.
// Run twice: as is (the universal build hashes with WebCrypto, which Node
// has), and with STRATA_NO_WEBCRYPTO=1 (no `crypto` global when the package
// loads: the universal build falls back to WebAssembly).
import { test } from "node:test";
import assert from "node:assert/strict";

import fc from "fast-check";

const noWebCrypto = Boolean(process.env.STRATA_NO_WEBCRYPTO);
// Counts WebCrypto HMAC calls (the universal build must make them, or not).
let subtleSigns = 0;
if (noWebCrypto) {
  Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
} else {
  const subtle = globalThis.crypto.subtle;
  const original = subtle.sign.bind(subtle);
  subtle.sign = (...args) => {
    subtleSigns++;
    return original(...args);
  };
}
const upstream = await import("@octokit/webhooks-methods");
const nodeBuild = await import("@strata/webhooks-methods");
const wasmBuild = await import("@strata/webhooks-methods/wasm");
const universal = noWebCrypto ? "universal build, no WebCrypto (HMAC in WebAssembly)" : "universal build (WebCrypto HMAC)";

test(`${universal}: hashes ${noWebCrypto ? "without" : "with"} crypto.subtle, the node build never does`, async () => {
  const before = subtleSigns;
  await nodeBuild.sign("mysecret", "{}");
  await nodeBuild.verify("mysecret", "{}", "sha256=00");
  assert.equal(subtleSigns, before);
  assert.equal(await wasmBuild.sign("mysecret", "{}"), await upstream.sign("mysecret", "{}"));
  assert.equal(await wasmBuild.verify("mysecret", "{}", await upstream.sign("mysecret", "{}")), true);
  assert.equal(subtleSigns, noWebCrypto ? 0 : before + 2);
});

for (const [build, { sign, verify, verifyWithFallback }] of [["node build (node:crypto)", nodeBuild], [universal, wasmBuild]]) {
  const payload = '{"foo":"bar"}';
  const signature = "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3";

  test(`${build}: sign gives GitHub's X-Hub-Signature-256 value`, async () => {
    assert.equal(await sign("mysecret", payload), signature);
  });

  test(`${build}: verify accepts the exact signature only`, async () => {
    assert.equal(await verify("mysecret", payload, signature), true);
    assert.equal(await verify("mysecret", payload + " ", signature), false);
    assert.equal(await verify("other", payload, signature), false);
    for (const bad of [signature.slice(0, 70), signature.slice(7), signature.toUpperCase(), "sha1=abc", "sha256=", "x", signature + "00"]) {
      assert.equal(await verify("mysecret", payload, bad), false, bad);
    }
  });

  test(`${build}: verifyWithFallback tries the additional secrets in order`, async () => {
    assert.equal(await verifyWithFallback("a", payload, signature, ["b", "mysecret"]), true);
    assert.equal(await verifyWithFallback("mysecret", payload, signature, undefined), true);
    assert.equal(await verifyWithFallback("a", payload, signature, ["b"]), false);
    await assert.rejects(verifyWithFallback("a", payload, signature, [""]), TypeError);
    assert.equal(await verifyWithFallback("mysecret", payload, signature, [""]), true);
  });

  test(`${build}: missing arguments reject with TypeError, like upstream`, async () => {
    await assert.rejects(sign(), { name: "TypeError", message: "[@strata/webhooks-methods] secret & payload required for sign()" });
    await assert.rejects(sign("s", {}), { name: "TypeError", message: "[@strata/webhooks-methods] payload must be a string" });
    await assert.rejects(verify("s", payload), { name: "TypeError", message: "[@strata/webhooks-methods] secret, eventPayload & signature required" });
    await assert.rejects(verify("s", {}, signature), { name: "TypeError", message: "[@strata/webhooks-methods] eventPayload must be a string" });
  });

  test(`${build}: VERSION is attached to sign and verify`, async () => {
    const { createRequire } = await import("node:module");
    const { version } = createRequire(import.meta.url)("@strata/webhooks-methods/package.json");
    assert.equal(sign.VERSION, version);
    assert.equal(verify.VERSION, version);
  });

  test(`${build}: arbitrary secrets and payloads sign exactly like upstream; any change of one byte fails (fast-check)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40 }), fc.string({ minLength: 1, maxLength: 300 }), fc.nat(), async (secret, body, at) => {
        const ours = await sign(secret, body);
        assert.equal(ours, await upstream.sign(secret, body));
        assert.equal(await verify(secret, body, ours), true);
        const position = 7 + (at % 64);
        const flipped = ours.slice(0, position) + (ours[position] === "0" ? "1" : "0") + ours.slice(position + 1);
        assert.equal(await verify(secret, body, flipped), false);
        assert.equal(await upstream.verify(secret, body, flipped), false);
        const changed = body.slice(0, at % body.length) + String.fromCharCode((body.charCodeAt(at % body.length) + 1) % 0xd800) + body.slice((at % body.length) + 1);
        if (changed !== body) assert.equal(await verify(secret, changed, ours), false);
      }),
      { numRuns: 500, seed: 20261122 },
    );
  });

  test(`${build}: arbitrary signature strings verify like upstream (fast-check)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 80 }), fc.stringMatching(/^sha256=[0-9a-fA-F]{0,66}$/)), async (candidate) => {
        if (!candidate) return;
        assert.equal(await verify("mysecret", payload, candidate), await upstream.verify("mysecret", payload, candidate));
      }),
      { numRuns: 1000, seed: 20261122 },
    );
  });
}

test("a Rust panic becomes a thrown Error, and both builds keep working", async () => {
  // Each build's loader registered its hook, only because test/hooks.mjs was preloaded.
  const hooks = globalThis[Symbol.for("strata.testHooks")].filter((hook) => hook.name === "@strata/webhooks-methods");
  assert.equal(hooks.length, 2);
  for (const hook of hooks) {
    assert.throws(() => hook.panic("boom"), /^Error: \[strata\] internal error in strata_test_panic: .*boom/s);
  }
  for (const build of [nodeBuild, wasmBuild]) {
    assert.equal("__testPanic" in build, false, "no test-only export");
    assert.equal(await build.sign("mysecret", '{"foo":"bar"}'), "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3");
    assert.equal(await build.verify("mysecret", '{"foo":"bar"}', "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3"), true);
  }
});
