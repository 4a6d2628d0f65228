// Runs a worker that imports an installed package under `wrangler dev`
// (workerd, from npm, offline, on 127.0.0.1) and hands its URL to `check`.
// Wrangler resolves the package through its "workerd" export condition.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startWrangler } from "./wrangler.mjs";

export async function runWorkerdCheck({ project, label, workerSource, check }) {
  const dir = join(project, `worker-${label.replace(/[^a-z0-9]+/gi, "-")}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "index.js"), workerSource);
  writeFileSync(join(dir, "wrangler.toml"), 'name = "strata-check"\nmain = "index.js"\ncompatibility_date = "2025-01-01"\n');
  const worker = await startWrangler({ wrangler: join(project, "node_modules", ".bin", "wrangler"), cwd: dir });
  try {
    await check(worker.url);
    console.log(`workerd: ${label} under wrangler dev: ok`);
  } catch (error) {
    console.error(`--- wrangler output ---\n${worker.output().slice(-3000)}`);
    throw error;
  } finally {
    await worker.stop();
  }
}
