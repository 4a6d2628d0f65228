// Builds both Rust receivers from source:
//   - the Cloudflare Worker with worker-build (build/index.js + index_bg.wasm),
//     pointed at the local wasm-bindgen CLI and at wasm-opt and esbuild from
//     node_modules so it downloads nothing;
//   - the WASI-HTTP component with cargo for wasm32-wasip2
//     (wasi/build/strata-receiver.wasm).
// `node scripts/build.mjs worker` or `... wasi` builds one of them.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const targetDir = process.env.CARGO_TARGET_DIR || join(homedir(), ".cache", "strata-target");
const env = { ...process.env, CARGO_TARGET_DIR: targetDir };

/** A local executable: ~/.cargo/bin, node_modules/.bin, then PATH; undefined when absent. */
function tool(name) {
  for (const candidate of [join(homedir(), ".cargo", "bin", name), join(root, "node_modules", ".bin", name)]) {
    if (existsSync(candidate)) return candidate;
  }
  try {
    return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

function buildWorker() {
  // worker-build downloads wasm-bindgen, wasm-opt and esbuild unless told
  // where they are; the ones found here are used (the CLI must match the
  // wasm-bindgen crate version, 0.2.130).
  const workerEnv = { ...env };
  for (const [variable, name] of [["WASM_BINDGEN_BIN", "wasm-bindgen"], ["WASM_OPT_BIN", "wasm-opt"], ["ESBUILD_BIN", "esbuild"]]) {
    const path = tool(name);
    if (path && !workerEnv[variable]) workerEnv[variable] = path;
  }
  const workerBuild = tool("worker-build");
  if (!workerBuild) throw new Error("worker-build not found: cargo install worker-build --version 0.8.7 (tests/worker.sh does)");
  execFileSync(workerBuild, ["--profile", "wasm"], { cwd: root, env: workerEnv, stdio: "inherit" });
}

function buildWasi() {
  execFileSync("cargo", ["build", "-p", "strata-worker-wasi", "--target", "wasm32-wasip2", "--release", "--locked"], {
    cwd: root,
    env,
    stdio: "inherit",
  });
  mkdirSync(join(root, "wasi", "build"), { recursive: true });
  copyFileSync(
    join(targetDir, "wasm32-wasip2", "release", "strata_worker_wasi.wasm"),
    join(root, "wasi", "build", "strata-receiver.wasm"),
  );
}

const which = process.argv[2];
if (!which || which === "worker") buildWorker();
if (!which || which === "wasi") buildWasi();
