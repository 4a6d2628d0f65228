// Runs a worker that imports an installed package under `wrangler dev`
// (workerd, from npm, offline, on 127.0.0.1) and hands its URL to `check`.
// Wrangler resolves the package through its "workerd" export condition.
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function runWorkerdCheck({ project, label, workerSource, check }) {
  const dir = join(project, `worker-${label.replace(/[^a-z0-9]+/gi, "-")}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "index.js"), workerSource);
  writeFileSync(join(dir, "wrangler.toml"), 'name = "strata-check"\nmain = "index.js"\ncompatibility_date = "2025-01-01"\n');
  const port = await freePort();
  const wrangler = spawn(join(project, "node_modules", ".bin", "wrangler"), ["dev", "--ip", "127.0.0.1", "--port", String(port)], {
    cwd: dir,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  wrangler.stdout.on("data", (chunk) => (output += chunk));
  wrangler.stderr.on("data", (chunk) => (output += chunk));
  const exited = new Promise((resolve) => wrangler.on("exit", resolve));
  const url = `http://127.0.0.1:${port}`;
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (/Ready on/.test(output)) break;
      if (Date.now() > deadline || wrangler.exitCode !== null) throw new Error(`wrangler dev did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await check(url);
    console.log(`workerd: ${label} under wrangler dev: ok`);
  } catch (error) {
    error.message += `\n--- wrangler output ---\n${output.slice(-3000)}`;
    throw error;
  } finally {
    try {
      process.kill(-wrangler.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await exited;
  }
}
