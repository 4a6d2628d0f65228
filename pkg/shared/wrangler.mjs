// Starts `wrangler dev` (workerd from npm, offline) on 127.0.0.1 and stops
// it: for the packages' worker checks and the edge receivers' tests.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// Process groups still running: killed when this process exits, even by an
// uncaught exception, so no server (or workerd below wrangler) outlives it.
const running = new Set();
process.on("exit", () => {
  for (const pid of running) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/**
 * Starts `command` in its own process group and waits until
 * `isReady(output)` resolves true. Returns `{ output(), stop() }`;
 * `output()` is everything the process printed so far.
 */
export async function startServer({ command, args, cwd, env = {}, isReady, label = command, timeoutMs = 120_000 }) {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  running.add(child.pid);
  const exited = new Promise((resolve) => child.on("exit", resolve)).then(() => running.delete(child.pid));
  const stop = async () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  while (!(await isReady(output))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      throw new Error(`${label} did not start:\n${output.slice(-3000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { output: () => output, stop };
}

/**
 * Runs `<wrangler> dev` in `cwd` with `args` and waits for "Ready on".
 * Returns `{ url, output(), stop() }`.
 */
export async function startWrangler({ wrangler, cwd, args = [], env = {}, timeoutMs = 120_000 }) {
  const port = await freePort();
  const server = await startServer({
    command: wrangler,
    args: ["dev", "--ip", "127.0.0.1", "--port", String(port), ...args],
    cwd,
    env: { WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1", ...env },
    isReady: async (output) => /Ready on/.test(output),
    label: "wrangler dev",
    timeoutMs,
  });
  return { url: `http://127.0.0.1:${port}`, ...server };
}
