// npm test: packs the package (npm run build first), installs the tarball into
// a fresh temporary project, and runs there:
//   1. node --test: behaviour (ESM), require() (CJS), differential against
//      @octokit/endpoint (RFC 6570 suite + fast-check);
//   2. tsc --noEmit of a typed usage file;
//   3. the page test in headless Chromium (STRATA_CHROMIUM or `chromium`);
//   4. the upstream project's own test suite (octokit/endpoint.js test/) when
//      a checkout of it is available (STRATA_UPSTREAM_ENDPOINT, default
//      ../.mirror/octokit+endpoint.js/repo next to the repository), with only
//      its import paths changed (and its user-agent product name, see README).
// Environment: URITEMPLATE_TEST_DIR (default ../shared/testdata/uritemplate-test).
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { runBrowserTest } from "./browser.mjs";
import { runUpstreamSuite } from "./upstream.mjs";
import { runWorkerdCheck } from "../../shared/workerd.mjs";

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = resolve(pkgDir, "..", "..");
const suiteDir = process.env.URITEMPLATE_TEST_DIR || resolve(repoRoot, "..", "shared", "testdata", "uritemplate-test");
const upstreamRepo = process.env.STRATA_UPSTREAM_ENDPOINT || resolve(repoRoot, "..", ".mirror", "octokit+endpoint.js", "repo");
const run = (command, args, options = {}) => execFileSync(command, args, { stdio: "inherit", ...options });

const project = mkdtempSync(join(tmpdir(), "strata-endpoint-test-"));
try {
  run("npm", ["pack", "--pack-destination", project, "--silent"], { cwd: pkgDir, stdio: ["ignore", "ignore", "inherit"] });
  const tarball = readdirSync(project).find((file) => file.endsWith(".tgz"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "strata-endpoint-test", private: true, type: "module" }));
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", join(project, tarball),
    "@octokit/endpoint@11", "@octokit/types", "fast-check@4", "typescript@5", "universal-user-agent@7", "vitest@4", "wrangler@4"], { cwd: project });
  cpSync(join(pkgDir, "test"), join(project, "test"), { recursive: true });

  const tests = readdirSync(join(project, "test")).filter((file) => /\.test\.(mjs|cjs)$/.test(file)).map((file) => join("test", file));
  run(process.execPath, ["--test", "--test-reporter=spec", ...tests], { cwd: project, env: { ...process.env, URITEMPLATE_TEST_DIR: suiteDir } });
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
  runUpstreamSuite(project, upstreamRepo);
} finally {
  rmSync(project, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
}
