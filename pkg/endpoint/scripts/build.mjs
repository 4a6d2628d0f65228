// npm run build: cargo (strata-wasm, profile `wasm`) -> wasm-bindgen ->
// wasm-opt -> bytes embedded as base64 -> esbuild bundles dist/index.mjs and
// dist/index.cjs. Needs cargo with the wasm32-unknown-unknown target and the
// wasm-bindgen CLI of the version pinned in wasm/Cargo.toml.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const buildDir = join(pkgDir, "build");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
// STRATA_PROFILE_BUILD=1 keeps function names in the wasm and the JS, for
// `node --cpu-prof` (see BENCHMARKS.md).
const profiling = process.env.STRATA_PROFILE_BUILD === "1";
const run = (command, args, options = {}) => execFileSync(command, args, { stdio: ["ignore", "pipe", "inherit"], ...options });

rmSync(buildDir, { recursive: true, force: true });
rmSync(join(pkgDir, "dist"), { recursive: true, force: true });
mkdirSync(buildDir, { recursive: true });

run("cargo", ["build", "-p", "strata-wasm", "--target", "wasm32-unknown-unknown", "--profile", "wasm"], { cwd: pkgDir, stdio: "inherit" });
const metadata = JSON.parse(run("cargo", ["metadata", "--format-version", "1", "--no-deps"], { cwd: pkgDir }).toString());
const wasmFile = join(metadata.target_directory, "wasm32-unknown-unknown", "wasm", "strata_wasm.wasm");

const localBindgen = join(homedir(), ".cargo", "bin", "wasm-bindgen");
const bindgen = process.env.WASM_BINDGEN_BIN || (existsSync(localBindgen) ? localBindgen : "wasm-bindgen");
run(bindgen, ["--target", "web", ...(profiling ? ["--keep-debug"] : []), "--out-dir", buildDir, "--out-name", "strata_wasm", wasmFile], { stdio: "inherit" });

const wasmOpt = join(pkgDir, "node_modules", ".bin", "wasm-opt");
const bgWasm = join(buildDir, "strata_wasm_bg.wasm");
run(wasmOpt, ["-Oz", ...(profiling ? ["--debuginfo"] : ["--strip-debug", "--strip-producers"]), "--enable-bulk-memory", "--enable-nontrapping-float-to-int",
  "--enable-sign-ext", "--enable-mutable-globals", "--enable-reference-types", "--enable-multivalue", bgWasm, "-o", bgWasm], { stdio: "inherit" });

const bytes = readFileSync(bgWasm);
writeFileSync(join(buildDir, "wasm-base64.js"), `export const WASM_BASE64 = ${JSON.stringify(bytes.toString("base64"))};\n`);
writeFileSync(join(buildDir, "version.js"), `export const VERSION = ${JSON.stringify(pkg.version)};\n`);

const common = {
  entryPoints: [join(pkgDir, "src", "index.js")],
  bundle: true,
  minify: !profiling,
  platform: "neutral",
  target: "es2020",
  legalComments: "none",
  // The async loader of wasm-bindgen's glue (never called: we load
  // synchronously) names import.meta.url, which CommonJS lacks.
  define: { "import.meta.url": '"file:///strata_wasm.js"' },
  logLevel: "warning",
};
await build({ ...common, format: "esm", outfile: join(pkgDir, "dist", "index.mjs") });
await build({ ...common, format: "cjs", outfile: join(pkgDir, "dist", "index.cjs") });
console.log(`built ${pkg.name}@${pkg.version}: wasm ${bytes.length} bytes`);
