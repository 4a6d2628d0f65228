// Starts `wrangler dev` (workerd from npm, offline) on 127.0.0.1 and stops
// it: for the packages' worker checks and the edge receivers' tests.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

/**
 * A free TCP port on 127.0.0.1, drawn from 27000–32767: below Linux's
 * ephemeral range (32768–60999), where the kernel hands out the local ports
 * of outgoing connections — CI's parallel lanes open thousands, and one of
 * them can take a port between our check and the server's bind — and above
 * the fixed ports of the suite's own servers (tests/servers.sh from 21329,
 * Citus 23601, the PostgreSQL majors from 26300).
 */
export async function freePort() {
  for (;;) {
    const port = 27000 + Math.floor(Math.random() * 5768);
    const server = createServer();
    const bound = await new Promise((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (bound) {
      await new Promise((resolve) => server.close(resolve));
      return port;
    }
  }
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
  // A port can still be taken between the check and workerd's bind: a start
  // that lost its port is tried again on another; any other failure is final.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
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
    } catch (error) {
      if (attempt >= 5 || !/Address already in use/.test(String(error.message))) throw error;
      console.error(`wrangler dev: port ${port} was taken before workerd bound it; trying another`);
    }
  }
}
