// Builds both Rust receivers from source:
//   - the Cloudflare Worker: cargo (profile `wasm`), the wasm-bindgen CLI of
//     the pinned version, wasm-opt from node_modules, and an entry module of
//     our own (build/index.js: the Workers runtime's entrypoint class calling
//     the exported handlers) — what worker-build generates, without
//     compiling worker-build (3 processor minutes on a fresh machine) or
//     downloading anything; wrangler bundles it;
//   - the WASI-HTTP component with cargo for wasm32-wasip2
//     (wasi/build/strata-receiver.wasm).
// `node scripts/build.mjs worker` or `... wasi` builds one of them.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** The handlers the Workers runtime calls with (event, env, ctx), when the crate exports them. */
const HANDLERS = ["fetch", "scheduled", "queue", "email"];

function buildWorker() {
  execFileSync("cargo", ["build", "-p", "strata-worker", "--lib", "--target", "wasm32-unknown-unknown", "--profile", "wasm", "--locked"], {
    cwd: root,
    env,
    stdio: "inherit",
  });
  const out = join(root, "build");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  // The CLI must match the wasm-bindgen crate's version (0.2.130, tests/tools.sh).
  const bindgen = process.env.WASM_BINDGEN_BIN || tool("wasm-bindgen");
  if (!bindgen) throw new Error("wasm-bindgen not found: bash tests/tools.sh wasm-bindgen-cli installs it");
  // The `module` target instantiates the module when the glue is imported;
  // the reset function lets the entry start a fresh instance after a panic
  // (panic = "abort": the instance is unusable after one), and the abort
  // handler tells the crate's panic hook (worker's init) that it happened.
  execFileSync(bindgen, [
    join(targetDir, "wasm32-unknown-unknown", "wasm", "strata_worker.wasm"),
    "--out-dir", out, "--out-name", "receiver", "--target", "module", "--no-typescript",
    "--experimental-reset-state-function", "--force-enable-abort-handler",
  ], { stdio: "inherit" });
  const glue = join(out, "receiver.js");
  // Workers import a .wasm file as a compiled module: a plain default
  // import, not the source-phase import the glue is written with.
  writeFileSync(glue, readFileSync(glue, "utf8").replace(/^import source /m, "import "));

  const wasmFile = join(out, "receiver_bg.wasm");
  const wasmOpt = process.env.WASM_OPT_BIN || tool("wasm-opt");
  if (!wasmOpt) throw new Error("wasm-opt not found: npm ci installs binaryen");
  // The features rustc's wasm32 target and workerd both have, named rather
  // than --all-features (binaryen's newer encodings may not load).
  const features = ["mutable-globals", "sign-ext", "nontrapping-float-to-int", "bulk-memory", "multivalue", "reference-types", "exception-handling"];
  execFileSync(wasmOpt, ["-O", ...features.map((name) => `--enable-${name}`), "--debuginfo", wasmFile, "-o", wasmFile], { stdio: "inherit" });

  const glueText = readFileSync(glue, "utf8");
  const handlers = HANDLERS.filter((name) => new RegExp(`^export (async )?function ${name}\\(`, "m").test(glueText));
  if (!handlers.includes("fetch")) throw new Error(`${glue} exports no fetch handler`);
  // Every class the glue exports: the crate's Durable Objects among them
  // (#[durable_object]), which the runtime finds by name in the entry.
  const classes = [...glueText.matchAll(/^export class (\w+) \{/gm)].map((match) => match[1]);
  writeFileSync(join(out, "index.js"), entryModule(handlers, classes));
}

/**
 * The Worker's entry: a WorkerEntrypoint whose handlers call the crate's
 * exports with the binding environment and execution context, and the
 * crate's Durable Object classes. A Rust panic aborts the WebAssembly
 * instance (a WebAssembly.RuntimeError; worker's panic hook marks it too):
 * the next call starts a fresh instance instead of failing forever, and an
 * object of an exported class (a Durable Object) made before is made again,
 * from its constructor's arguments, on its next call.
 */
function entryModule(handlers, classes) {
  const methods = handlers.map((name) => `  ${name}(event) {
    return guarded(() => receiver.${name}(event, this.env, this.ctx));
  }`);
  const objects = classes.map((name) => `export const ${name} = remadeAfterPanic(receiver.${name});`);
  return `// Written by worker/scripts/build.mjs: the Workers runtime's entry for strata-worker.
import { WorkerEntrypoint } from "cloudflare:workers";
import * as receiver from "./receiver.js";

const state = receiver.__worker_init_state();
let generation = 0;

async function guarded(call) {
  if (state.criticalError) {
    console.log("strata-worker: a fresh WebAssembly instance after a panic");
    receiver.__wbg_reset_state();
    state.criticalError = false;
    generation++;
  }
  try {
    return await call();
  } catch (error) {
    if (error instanceof WebAssembly.RuntimeError) state.criticalError = true;
    throw error;
  }
}

function remadeAfterPanic(Class) {
  return function (...args) {
    let made = generation;
    let object = new Class(...args);
    const current = () => {
      if (made !== generation) {
        object = new Class(...args);
        made = generation;
      }
      return object;
    };
    return new Proxy({}, {
      get(_, name) {
        const value = current()[name];
        if (typeof value !== "function") return value;
        return (...callArgs) => guarded(() => current()[name](...callArgs));
      },
    });
  };
}

export default class StrataReceiver extends WorkerEntrypoint {
${methods.join("\n\n")}
}
${objects.join("\n")}
`;
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
