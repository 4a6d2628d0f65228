// node lint.mjs TARBALL...: the npm ecosystem's package linters on each packed
// tarball. Fails on any message at all:
// - publint (every level: error, warning and suggestion): exports, files,
//   sideEffects, engines, the format each file is in;
// - @arethetypeswrong/cli, profile "strict" (node10, node16 from CommonJS,
//   node16 from ESM, bundler): the types each entry point resolves to under
//   each resolution, and that they describe the JavaScript found there;
// - the tarball's file list: nothing but package.json, README, LICENSE, dist/
//   and types/ (no test, script, source map or lockfile).
// The versions are pinned in package.json beside this file (npm ci).
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { publint } from "publint";
import { formatMessage } from "publint/utils";

const here = dirname(fileURLToPath(import.meta.url));
const tarballs = process.argv.slice(2);
if (tarballs.length === 0) {
  console.error("usage: node lint.mjs TARBALL...");
  process.exit(2);
}

let failed = 0;
for (const tarball of tarballs) {
  const bytes = readFileSync(tarball);
  const { messages, pkg } = await publint({ pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) }, level: "suggestion", strict: true });
  for (const message of messages) {
    console.error(`publint ${pkg.name}: ${message.type}: ${formatMessage(message, pkg) ?? message.code}`);
  }
  failed += messages.length;

  const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).trim().split("\n");
  const stray = files.filter((file) => !/^package\/(package\.json|README\.md|LICENSE(\.md)?|dist\/[^/]+\.(mjs|cjs|d\.cts|wasm)|types\/[^/]+\.d\.ts|(wasm|internals)\/package\.json)$/.test(file));
  for (const file of stray) console.error(`tarball ${pkg.name}: ${file} is not part of the published package`);
  failed += stray.length;

  let attw = 0;
  try {
    execFileSync(join(here, "node_modules", ".bin", "attw"), [tarball, "--profile", "strict", "--no-definitely-typed", "--format", "table", "--no-color"], {
      stdio: "inherit",
    });
  } catch {
    attw = 1;
    console.error(`attw ${pkg.name}: problems (above)`);
  }
  failed += attw;
  console.log(`${pkg.name}: publint ${messages.length} messages, attw ${attw ? "problems" : "no problems"}, ${files.length} files, ${stray.length} stray`);
}
if (failed) process.exit(1);
