// The build every package under pkg/ shares: cargo builds strata-wasm with the
// package's features (profile `wasm`), wasm-bindgen generates the glue,
// wasm-opt shrinks the module, the bytes are embedded as base64, and esbuild
// bundles each entry as ESM (.mjs) and CommonJS (.cjs). Needs cargo with the
// wasm32-unknown-unknown target and the wasm-bindgen CLI of the version pinned
// in wasm/Cargo.toml. STRATA_PROFILE_BUILD=1 keeps function names (for
// `node --cpu-prof`).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export async function buildPackage({ pkgDir, features, entries, profile = "wasm", beforeBundle, workerdEntry = "index.js" }) {
  // esbuild and binaryen are each package's own dev dependencies.
  const esbuildPath = createRequire(join(pkgDir, "package.json")).resolve("esbuild");
  const { build } = await import(pathToFileURL(esbuildPath).href);
  const buildDir = join(pkgDir, "build");
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
  const profiling = process.env.STRATA_PROFILE_BUILD === "1";
  const run = (command, args, options = {}) => execFileSync(command, args, { stdio: ["ignore", "pipe", "inherit"], ...options });

  rmSync(buildDir, { recursive: true, force: true });
  rmSync(join(pkgDir, "dist"), { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });

  run("cargo", ["build", "-p", "strata-wasm", "--target", "wasm32-unknown-unknown", "--profile", profile,
    "--no-default-features", "--features", features.join(",")], { cwd: pkgDir, stdio: "inherit" });
  const metadata = JSON.parse(run("cargo", ["metadata", "--format-version", "1", "--no-deps"], { cwd: pkgDir }).toString());
  const wasmFile = join(metadata.target_directory, "wasm32-unknown-unknown", profile, "strata_wasm.wasm");

  const localBindgen = join(homedir(), ".cargo", "bin", "wasm-bindgen");
  const bindgen = process.env.WASM_BINDGEN_BIN || (existsSync(localBindgen) ? localBindgen : "wasm-bindgen");
  run(bindgen, ["--target", "web", "--experimental-reset-state-function", ...(profiling ? ["--keep-debug"] : []), "--out-dir", buildDir, "--out-name", "strata_wasm", wasmFile], { stdio: "inherit" });

  const wasmOpt = join(pkgDir, "node_modules", ".bin", "wasm-opt");
  const bgWasm = join(buildDir, "strata_wasm_bg.wasm");
  run(wasmOpt, ["-O3", ...(profiling ? ["--debuginfo"] : ["--strip-debug", "--strip-producers"]), "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int", "--enable-sign-ext", "--enable-mutable-globals", "--enable-reference-types",
    "--enable-multivalue", bgWasm, "-o", bgWasm], { stdio: "inherit" });

  const bytes = readFileSync(bgWasm);
  // One character per byte (U+0100 + byte): unlike base64 it keeps the
  // module's byte patterns aligned, so gzip shrinks the bundle about as well
  // as the raw wasm (webhooks: 29.6 KB instead of 35.7 KB gzipped).
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(0x100 + byte);
  writeFileSync(join(buildDir, "wasm-text.js"), `export const WASM_TEXT = "${text}";\n`);
  writeFileSync(join(buildDir, "version.js"), `export const VERSION = ${JSON.stringify(pkg.version)};\n`);

  if (beforeBundle) await beforeBundle(buildDir);

  for (const entry of entries) {
    const common = {
      entryPoints: [join(pkgDir, "src", entry)],
      bundle: true,
      minify: !profiling,
      platform: "neutral",
      // Only the Node builds (the "node" export condition) import node: modules.
      external: ["node:*"],
      target: "es2020",
      legalComments: "none",
      charset: "utf8", // keep the embedded wasm text as UTF-8, not \u escapes
      // wasm-bindgen's async loader (never called: the module is instantiated
      // synchronously) names import.meta.url, which CommonJS lacks.
      define: { "import.meta.url": '"file:///strata_wasm.js"' },
      logLevel: "warning",
    };
    const base = entry.replace(/\.js$/, "");
    await build({ ...common, format: "esm", outfile: join(pkgDir, "dist", `${base}.mjs`) });
    await build({ ...common, format: "cjs", outfile: join(pkgDir, "dist", `${base}.cjs`) });
  }

  // Cloudflare Workers (workerd) refuse to compile WebAssembly from bytes at
  // run time: their build (the "workerd" export condition) imports the .wasm
  // file as a module, which the platform compiles at upload.
  writeFileSync(join(pkgDir, "dist", "strata.wasm"), bytes);
  const wasmModuleImport = {
    name: "wasm-as-module",
    setup(plugin) {
      plugin.onResolve({ filter: /build\/wasm-text\.js$/ }, () => ({ path: "wasm-module", namespace: "strata" }));
      plugin.onLoad({ filter: /.*/, namespace: "strata" }, () => ({
        contents: 'import module from "./strata.wasm"; export const WASM_TEXT = module;',
        resolveDir: join(pkgDir, "dist"),
      }));
    },
  };
  await build({
    entryPoints: [join(pkgDir, "src", workerdEntry)],
    bundle: true,
    minify: !profiling,
    platform: "neutral",
    target: "es2022",
    legalComments: "none",
    charset: "utf8",
    external: ["node:*", "./strata.wasm"],
    define: { "import.meta.url": '"file:///strata_wasm.js"' },
    logLevel: "warning",
    format: "esm",
    outfile: join(pkgDir, "dist", "workerd.mjs"),
    plugins: [wasmModuleImport],
  });
  writeCommonJsTypes(pkgDir);
  // The licence travels in the tarball (npm packs a LICENSE file by itself).
  writeFileSync(join(pkgDir, "LICENSE"), readFileSync(join(pkgDir, "..", "..", "LICENSE")));
  console.log(`built ${pkg.name}@${pkg.version}: wasm ${bytes.length} bytes`);
}

/**
 * The declarations for `require`: each `types/<name>.d.ts` (ES module
 * declarations, as the package is `"type": "module"`) copied to
 * `dist/<name>.d.cts` with its relative imports pointing at the `.cjs`
 * siblings, so TypeScript under node16/nodenext sees CommonJS types for the
 * CommonJS build (else `require` users get "masquerading as ESM" types).
 */
export function writeCommonJsTypes(pkgDir) {
  const typesDir = join(pkgDir, "types");
  for (const file of readdirSync(typesDir).filter((name) => name.endsWith(".d.ts"))) {
    const text = readFileSync(join(typesDir, file), "utf8").replace(/(from\s+"\.\/[^"]+)\.js"/g, '$1.cjs"');
    writeFileSync(join(pkgDir, "dist", file.replace(/\.d\.ts$/, ".d.cts")), text);
  }
}
