// npm test: checks the generated event files are current (generate.mjs
// --check), packs this package and ../webhooks-methods, installs both into a
// fresh project and runs: the behaviour tests (API, middleware over real HTTP,
// size limit, timeout, relay), every @octokit/webhooks-examples delivery and a
// delivery built from each of the 261 definitions of @octokit/openapi-webhooks
// through both middleware, CJS, tsc on typed usage (against this package and
// @octokit/webhooks), and octokit/webhooks.js's own test/ suite plus its
// typescript-validate.ts (upstream's own result) when a checkout is available
// (STRATA_UPSTREAM_WEBHOOKS, default ../.mirror/octokit+webhooks.js/repo).
import { execFileSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { runBrowserCheck } from "../../shared/browser.mjs";
import { runWorkerdCheck } from "../../shared/workerd.mjs";
import { copyTests, createProject, nodeTests, repoRoot, run, runUpstreamSuite } from "../../shared/harness.mjs";

// The committed generated files (core/src/webhooks/events.rs, src/event-names.js,
// types/generated.d.ts) must be what the pinned @octokit/openapi-webhooks-types generates.
run("node", [join(dirname(fileURLToPath(import.meta.url)), "generate.mjs"), "--check"]);

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const methodsDir = resolve(pkgDir, "..", "webhooks-methods");
const upstream = process.env.STRATA_UPSTREAM_WEBHOOKS || resolve(repoRoot, "..", ".mirror", "octokit+webhooks.js", "repo");

if (!existsSync(join(methodsDir, "dist"))) run("npm", ["run", "build"], { cwd: methodsDir });
const { dir, cleanup } = createProject("strata-webhooks-test", [pkgDir, methodsDir], [
  "@octokit/webhooks@14.2.0", "@octokit/openapi-webhooks@12.1.0", "@octokit/webhooks-examples@7", "fast-check@4", "wrangler@4", "eventsource@3", "typescript@5.9.3", "vitest@4", "get-port@7", "express@5", "@types/node@20",
]);

// Upstream module -> our entry point. Type-only modules map to the main entry.
const INTERNAL = ["event-handler/on", "event-handler/receive", "event-handler/remove-listener", "event-handler/wrap-error-handler",
  "event-handler/validate-event-name", "middleware/node/get-payload", "concat-uint8array", "create-logger", "normalize-trailing-slashes"];
function rewrite(source) {
  return source
    .replace(/from "((?:\.\.\/)+)src\/([^"]+)\.ts"/g, (_, _up, module) =>
      INTERNAL.includes(module) ? 'from "@strata/webhooks/internals"' : 'from "@strata/webhooks"')
    .replaceAll('from "@octokit/webhooks-methods"', 'from "@strata/webhooks-methods"')
    .replaceAll("[@octokit/webhooks]", "[@strata/webhooks]");
}

try {
  copyTests(pkgDir, dir);
  nodeTests(dir, ["test/behaviour.test.mjs", "test/examples.test.mjs", "test/definitions.test.mjs", "test/differential.test.mjs", "test/require.test.cjs"]);

  run(join(dir, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: dir });
  const typed = readFileSync(join(dir, "test", "typed-usage.ts"), "utf8");
  writeFileSync(join(dir, "test", "typed-usage.ts"), typed.replaceAll('"@strata/webhooks"', '"@octokit/webhooks"'));
  run(join(dir, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: dir });
  console.log("tsc --noEmit: the typed usage compiles against this package and against @octokit/webhooks");

  const nodeSignature = "sha256=" + createHmac("sha256", "browser secret").update(JSON.stringify({ action: "opened", issue: { number: 1 } })).digest("hex");
  // The universal build (no node: imports) in a browser page and a worker:
  // sign, verify and dispatch, and the web middleware answering a Request.
  await runBrowserCheck({
    project: dir,
    packageName: "@strata/webhooks",
    label: "@strata/webhooks",
    checkSource: `
import { Webhooks, createWebMiddleware } from "/pkg/index.mjs";
export async function check() {
  const webhooks = new Webhooks({ secret: "browser secret" });
  const seen = [];
  webhooks.on("issues.opened", (event) => seen.push(event.id));
  const body = JSON.stringify({ action: "opened", issue: { number: 1 } });
  const signature = await webhooks.sign(body);
  const expected = ${JSON.stringify(nodeSignature)};
  if (signature !== expected) throw new Error("signature " + signature + ", node:crypto says " + expected);
  const middleware = createWebMiddleware(webhooks);
  const headers = { "content-type": "application/json", "x-github-event": "issues", "x-github-delivery": "browser-1", "x-hub-signature-256": signature };
  const ok = await middleware(new Request("http://localhost/api/github/webhooks", { method: "POST", headers, body }));
  if (ok.status !== 200 || (await ok.text()) !== "ok\\n") throw new Error("status " + ok.status);
  const bad = await middleware(new Request("http://localhost/api/github/webhooks", { method: "POST", headers: { ...headers, "x-hub-signature-256": "sha256=00" }, body }));
  if (bad.status !== 400) throw new Error("bad signature got " + bad.status);
  if (seen.join() !== "browser-1") throw new Error("handlers saw " + seen.join());
  return "ok";
}
`,
  });

  // The web middleware as a whole worker under workerd (no Node compatibility).
  await runWorkerdCheck({
    project: dir,
    label: "@strata/webhooks web middleware",
    workerSource: `import { Webhooks, createWebMiddleware } from "@strata/webhooks";
const webhooks = new Webhooks({ secret: "worker secret" });
let seen = [];
webhooks.on("issues.opened", (event) => seen.push(event.id));
const middleware = createWebMiddleware(webhooks);
export default {
  async fetch(request) {
    if (new URL(request.url).pathname === "/seen") return new Response(seen.join(","));
    return middleware(request);
  },
};
`,
    async check(url) {
      const body = JSON.stringify({ action: "opened", issue: { number: 1 } });
      const signature = "sha256=" + createHmac("sha256", "worker secret").update(body).digest("hex");
      const post = (sig) => fetch(`${url}/api/github/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-github-event": "issues", "x-github-delivery": "edge-1", "x-hub-signature-256": sig },
        body,
      });
      let response = await post(signature);
      if (response.status !== 200 || (await response.text()) !== "ok\n") throw new Error(`delivery got ${response.status}`);
      response = await post(signature.replace(/.$/, (c) => (c === "0" ? "1" : "0")));
      if (response.status !== 400) throw new Error(`a wrong signature got ${response.status}`);
      const seen = await (await fetch(`${url}/seen`)).text();
      if (seen !== "edge-1") throw new Error(`handlers saw ${seen}`);
    },
  });

  runUpstreamSuite({
    project: dir,
    repo: upstream,
    label: "webhooks",
    include: ["test/**/*.test.ts"],
    rewrite,
    replaceFiles: {
      "test/tsconfig.json": JSON.stringify({ compilerOptions: { target: "es2023", module: "node16", moduleResolution: "node16", strict: true, allowImportingTsExtensions: true, noEmit: true, resolveJsonModule: true, esModuleInterop: true, skipLibCheck: true } }),
    },
  });
  if (existsSync(upstream)) {
    // Upstream's test/typescript-validate.ts: at @octokit/webhooks 14.2.0
    // (openapi-webhooks-types 12.1.0, 323 names) `webhooks.on("does_not_exist",
    // ...)` makes TypeScript 5.9 give up with TS2590 (the union of every
    // event's payloads is too large), and @octokit/webhooks itself gets exactly
    // this one diagnostic on its own file. So: exactly upstream's result.
    const validate = join(dir, "upstream-webhooks", "test", "typescript-validate.ts");
    let output = "";
    try {
      output = execFileSync(join(dir, "node_modules", ".bin", "tsc"), ["--noEmit", "--noImplicitAny", "--target", "es2023", "--esModuleInterop",
        "--moduleResolution", "node16", "--module", "node16", "--skipLibCheck", validate], { cwd: dir, encoding: "utf8" });
    } catch (error) {
      output = error.stdout;
    }
    const expected = "upstream-webhooks/test/typescript-validate.ts(180,17): error TS2590: Expression produces a union type that is too complex to represent.";
    if (output.trim() !== expected) throw new Error(`tsc on upstream's typescript-validate.ts:\n${output}\nexpected exactly:\n${expected}`);
    console.log("tsc: upstream's test/typescript-validate.ts gives against this package exactly what it gives against @octokit/webhooks 14.2.0 (one TS2590)");
  }
} finally {
  cleanup();
}
