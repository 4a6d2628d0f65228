// npm test: packs the package (npm run build first), installs the tarball into
// a fresh temporary project, and runs there:
//   1. node --test: behaviour (ESM), require() (CJS), differential against
//      @octokit/endpoint (RFC 6570 suite + fast-check);
//   2. tsc --noEmit of a typed usage file, against this package and upstream;
//   3. the page test in headless Chromium and a worker under wrangler dev;
//   4. the upstream project's own test suite (octokit/endpoint.js test/) when
//      a checkout is available (STRATA_UPSTREAM_ENDPOINT, default
//      ../.mirror/octokit+endpoint.js/repo next to the repository), with only
//      its import paths changed (and its user-agent product name, see README).
// Environment: URITEMPLATE_TEST_DIR (default tests/data/uritemplate-test).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { runBrowserTest } from "./browser.mjs";
import { copyTests, createProject, nodeTests, repoRoot, run, runUpstreamSuite } from "../../shared/harness.mjs";
import { runWorkerdCheck } from "../../shared/workerd.mjs";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const suiteDir = process.env.URITEMPLATE_TEST_DIR || resolve(repoRoot, "tests", "data", "uritemplate-test");
const upstreamRepo = process.env.STRATA_UPSTREAM_ENDPOINT || resolve(repoRoot, "..", ".mirror", "octokit+endpoint.js", "repo");

// Upstream at the version this package tracks (README), exactly: a release
// that changes an expansion (11.0.6 gave exploded values and undefined
// variables RFC 6570's separators) would fail the differential tests on a
// fresh machine's npm before this package follows it.
const { dir: project, cleanup } = createProject("strata-endpoint-test", [pkgDir], [
  "@octokit/endpoint@11.0.6", "@octokit/types", "fast-check@4", "typescript@5", "universal-user-agent@7", "vitest@4", "wrangler@4",
]);
try {
  copyTests(pkgDir, project);
  nodeTests(project, ["test/behaviour.test.mjs", "test/differential.test.mjs", "test/require.test.cjs"], { URITEMPLATE_TEST_DIR: suiteDir });

  run(join(project, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: project });
  const typed = readFileSync(join(project, "test", "typed-usage.ts"), "utf8");
  writeFileSync(join(project, "test", "typed-usage.ts"), typed.replace('from "@strata/endpoint"', 'from "@octokit/endpoint"'));
  run(join(project, "node_modules", ".bin", "tsc"), ["-p", join("test", "tsconfig.json")], { cwd: project });
  console.log("tsc --noEmit: the typed usage compiles against this package and against @octokit/endpoint");

  await runBrowserTest(project);
  await runWorkerdCheck({
    project,
    label: "@strata/endpoint",
    workerSource: `import { endpoint } from "@strata/endpoint";
export default {
  fetch() {
    const options = endpoint("GET /repos/{owner}/{repo}/issues{?state}", { owner: "o", repo: "r", state: "open", per_page: 2 });
    return new Response(JSON.stringify(options));
  },
};
`,
    async check(url) {
      const options = await (await fetch(url)).json();
      if (options.url !== "https://api.github.com/repos/o/r/issues?state=open&per_page=2" || !options.headers["user-agent"].startsWith("strata-endpoint.js/")) {
        throw new Error(`the worker answered ${JSON.stringify(options)}`);
      }
    },
  });

  // Import paths, plus the user-agent product name the tests build from a
  // literal ("octokit-endpoint.js/" -> ours).
  runUpstreamSuite({
    project,
    repo: upstreamRepo,
    label: "endpoint",
    include: ["test/**/*.test.ts"],
    rewrite: (source) =>
      source
        .replace(/from "\.\.\/src\/(index|version|util\/is-plain-object)\.(ts|js)"/g, 'from "@strata/endpoint"')
        .replace(/`octokit-endpoint\.js\//g, "`strata-endpoint.js/"),
  });
} finally {
  cleanup();
}
