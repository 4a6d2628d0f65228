// Runs octokit/endpoint.js's own test/ directory against the installed
// package. Only import paths are rewritten, plus the user-agent product name
// the tests build from a literal ("octokit-endpoint.js/" -> ours).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const IMPORTS = [
  [/from "\.\.\/src\/index\.(ts|js)"/g, 'from "@strata/endpoint"'],
  [/from "\.\.\/src\/version\.(ts|js)"/g, 'from "@strata/endpoint"'],
  [/from "\.\.\/src\/util\/is-plain-object\.(ts|js)"/g, 'from "@strata/endpoint"'],
];
const USER_AGENT_PRODUCT = [/`octokit-endpoint\.js\//g, "`strata-endpoint.js/"];

export function runUpstreamSuite(project, upstreamRepo) {
  if (!existsSync(upstreamRepo)) {
    console.log(`upstream suite: SKIPPED, no checkout of octokit/endpoint.js at ${upstreamRepo}`);
    return;
  }
  const git = (...args) => execFileSync("git", ["--git-dir", existsSync(join(upstreamRepo, ".git")) ? join(upstreamRepo, ".git") : upstreamRepo, ...args]).toString();
  const commit = git("rev-parse", "HEAD").trim();
  const files = git("ls-tree", "--name-only", "HEAD", "test/").split("\n").filter((file) => file.endsWith(".test.ts"));
  const dir = join(project, "upstream");
  mkdirSync(dir, { recursive: true });
  for (const file of files) {
    let source = git("show", `HEAD:${file}`);
    for (const [pattern, replacement] of [...IMPORTS, USER_AGENT_PRODUCT]) source = source.replace(pattern, replacement);
    if (/\.\.\/src\//.test(source)) throw new Error(`${file} imports upstream sources this runner does not map`);
    writeFileSync(join(dir, file.slice("test/".length)), source);
  }
  writeFileSync(join(project, "vitest.config.mjs"), "export default { test: { include: ['upstream/**/*.test.ts'] } };\n");
  console.log(`upstream suite: octokit/endpoint.js ${commit.slice(0, 12)}, ${files.length} files`);
  execFileSync(join(project, "node_modules", ".bin", "vitest"), ["run", "--config", "vitest.config.mjs"], { cwd: project, stdio: "inherit" });
}
