// Test helpers shared by the packages' scripts/test.mjs: pack packages into a
// fresh temporary project, and run an upstream project's own test suite
// there (read from a git checkout, never copied into this repository) with
// its import paths rewritten to ours.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const run = (command, args, options = {}) => execFileSync(command, args, { stdio: "inherit", ...options });

/** Packs each package and installs the tarballs plus `deps` into a new project. */
export function createProject(name, packageDirs, deps) {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const tarballs = [];
  for (const pkgDir of packageDirs) {
    const before = new Set(readdirSync(dir));
    run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: pkgDir, stdio: ["ignore", "ignore", "inherit"] });
    tarballs.push(join(dir, readdirSync(dir).find((file) => file.endsWith(".tgz") && !before.has(file))));
  }
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }));
  run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", ...tarballs, ...deps], { cwd: dir });
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }) };
}

/** Copies this package's test/ directory into the project. */
export function copyTests(pkgDir, project) {
  cpSync(join(pkgDir, "test"), join(project, "test"), { recursive: true });
}

/** node --test on the given files of the project. */
export function nodeTests(project, files, env = {}) {
  // test/hooks.mjs, when the package has one, is preloaded (see shared/loader.js).
  const preload = existsSync(join(project, "test", "hooks.mjs")) ? ["--import", "./test/hooks.mjs"] : [];
  run(process.execPath, [...preload, "--test", "--test-reporter=spec", ...files], { cwd: project, env: { ...process.env, ...env } });
}

/**
 * Runs `repo`'s test/ suite with vitest in `project/upstream-<name>/`.
 * `rewrite(source, file)` maps imports; an import of upstream sources left
 * unmapped fails the run. Prints SKIPPED when there is no checkout.
 */
export function runUpstreamSuite({ project, repo, label, include, rewrite, exclude = () => false, replaceFiles = {} }) {
  if (!existsSync(repo)) {
    console.log(`upstream suite ${label}: SKIPPED, no checkout at ${repo}`);
    return;
  }
  const gitDir = existsSync(join(repo, ".git")) ? join(repo, ".git") : repo;
  const git = (...args) => execFileSync("git", ["--git-dir", gitDir, ...args], { maxBuffer: 1 << 28 }).toString();
  const commit = git("rev-parse", "HEAD").trim();
  const files = git("ls-tree", "-r", "--name-only", "HEAD", "test/").split("\n").filter((file) => file && !exclude(file));
  const root = join(project, `upstream-${label}`);
  for (const file of files) {
    const target = join(root, file);
    mkdirSync(dirname(target), { recursive: true });
    const raw = execFileSync("git", ["--git-dir", gitDir, "show", `HEAD:${file}`], { maxBuffer: 1 << 28 });
    if (/\.(ts|js|mjs)$/.test(file)) {
      const source = rewrite(raw.toString(), file);
      if (/from "(\.\.\/)+src\//.test(source)) throw new Error(`${file}: an import of upstream sources is not mapped`);
      writeFileSync(target, source);
    } else {
      writeFileSync(target, raw);
    }
  }
  // Configuration files of upstream's repository root that the copied tests
  // refer to (e.g. a tsconfig extending one outside test/).
  for (const [file, content] of Object.entries(replaceFiles)) writeFileSync(join(root, file), content);
  writeFileSync(join(root, "vitest.config.mjs"), `export default { test: { include: ${JSON.stringify(include)} } };\n`);
  console.log(`upstream suite ${label}: ${commit.slice(0, 12)}, ${files.length} files`);
  run(join(project, "node_modules", ".bin", "vitest"), ["run", "--config", "vitest.config.mjs"], { cwd: root });
}
