// npm test: packs this package, installs it into a fresh project and runs the
// behaviour tests (ESM + CJS, differential against @octokit/webhooks-methods),
// a tsc check, and octokit/webhooks-methods.js's own test/ suite when a
// checkout is available (STRATA_UPSTREAM_WEBHOOKS_METHODS, default
// ../.mirror/octokit+webhooks-methods.js/repo beside the repository).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { copyTests, createProject, nodeTests, repoRoot, run, runUpstreamSuite } from "../../shared/harness.mjs";
import { runWorkerdCheck } from "../../shared/workerd.mjs";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const upstream = process.env.STRATA_UPSTREAM_WEBHOOKS_METHODS || resolve(repoRoot, "..", ".mirror", "octokit+webhooks-methods.js", "repo");

const { dir, cleanup } = createProject("strata-webhooks-methods-test", [pkgDir], [
  "@octokit/webhooks-methods@6.0.0", "typescript@5", "vitest@4", "fast-check@4", "wrangler@4",
]);
try {
  copyTests(pkgDir, dir);
  nodeTests(dir, ["test/behaviour.test.mjs", "test/require.test.cjs"]);
  nodeTests(dir, ["test/behaviour.test.mjs"], { STRATA_NO_WEBCRYPTO: "1" });
  run(join(dir, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: dir });
  const typed = readFileSync(join(dir, "test", "typed-usage.ts"), "utf8");
  writeFileSync(join(dir, "test", "typed-usage.ts"), typed.replaceAll('"@strata/webhooks-methods"', '"@octokit/webhooks-methods"'));
  run(join(dir, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: dir });
  console.log("tsc --noEmit: the typed usage compiles against this package and against @octokit/webhooks-methods");
  await runWorkerdCheck({
    project: dir,
    label: "@strata/webhooks-methods",
    workerSource: `import { sign, verify } from "@strata/webhooks-methods";
export default {
  async fetch() {
    const signature = await sign("mysecret", '{"foo":"bar"}');
    return new Response(signature + " " + (await verify("mysecret", '{"foo":"bar"}', signature)));
  },
};
`,
    async check(url) {
      const text = await (await fetch(url)).text();
      if (text !== "sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3 true") throw new Error(`the worker answered ${text}`);
    },
  });
  runUpstreamSuite({
    project: dir,
    repo: upstream,
    label: "webhooks-methods",
    include: ["test/**/*.test.ts"],
    exclude: (file) => file.includes("/deno/") || file.endsWith(".bench.ts") || file.endsWith("browser-test.js"),
    // Import paths, plus two identity strings: the package tag in error
    // messages and upstream's unreleased version placeholder.
    rewrite: (source) =>
      source
        .replaceAll('from "../src/index.ts"', 'from "@strata/webhooks-methods"')
        .replaceAll("[@octokit/webhooks-methods]", "[@strata/webhooks-methods]")
        .replaceAll('"0.0.0-development"', JSON.stringify(version)),
  });
} finally {
  cleanup();
}
