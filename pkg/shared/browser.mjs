// Loads an installed package in headless Chromium as a browser ES module
// (no bundler), on a page's main thread and in a module Web Worker, and runs
// `checkSource` there: an ES module exporting `async check()` that returns
// "ok" or throws. The package is served at /pkg/index.mjs; the page POSTs
// what happened to /result (real time: no virtual-time budget, so timers,
// streams and crypto in the worker behave as in a browser).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import { join } from "node:path";

const PAGE = `<!doctype html><meta charset="utf-8"><body><pre id="out">pending</pre>
<script type="module">
const out = document.getElementById("out");
const results = [];
try { results.push("main:" + (await (await import("/check.mjs")).check())); } catch (error) { results.push("main:" + error); }
out.textContent = "PARTIAL " + results.join(" ");
const worker = new Worker("/worker.mjs", { type: "module" });
const report = () => fetch("/result", { method: "POST", body: results.join(" ") });
worker.onmessage = (event) => { results.push("worker:" + event.data); report(); };
worker.onerror = (event) => { results.push("worker:" + event.message); report(); };
</script>`;

const WORKER = `import { check } from "/check.mjs";
let result;
try { result = await check(); } catch (error) { result = String(error); }
postMessage(result);`;

/**
 * Serves `files` (path -> [content type, body]) on 127.0.0.1; the page's
 * `POST /result` resolves `result` with its body. Returns `{ url, result, close() }`.
 */
export async function servePage(files) {
  let reported;
  const result = new Promise((resolve) => (reported = resolve));
  const server = createServer((request, response) => {
    if (request.method === "POST" && request.url === "/result") {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        response.end();
        reported(body);
      });
      return;
    }
    const file = files[request.url];
    response.writeHead(file ? 200 : 404, { "content-type": file ? `${file[0]}; charset=utf-8` : "text/plain" });
    response.end(file ? file[1] : "not found");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    result,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Headless Chromium (`STRATA_CHROMIUM` or `chromium`) on `url`, in its own
 * process group with a fresh profile. Returns `{ exited, stop() }`.
 */
export function startChromium(url) {
  const profile = mkdtempSync(join(tmpdir(), "strata-chromium-"));
  const browser = spawn(process.env.STRATA_CHROMIUM || "chromium", ["--headless", "--no-sandbox", "--disable-gpu",
    "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking", "--user-data-dir=" + profile, url],
    { stdio: "ignore", detached: true });
  const exited = new Promise((resolve) => browser.on("exit", resolve));
  return {
    exited,
    async stop() {
      try {
        process.kill(-browser.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await exited;
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    },
  };
}

export async function runBrowserCheck({ project, packageName, checkSource, label }) {
  const pkgDir = join(project, "node_modules", ...packageName.split("/"));
  const page = await servePage({
    "/": ["text/html", PAGE],
    "/check.mjs": ["text/javascript", checkSource],
    "/worker.mjs": ["text/javascript", WORKER],
    "/pkg/index.mjs": ["text/javascript", readFileSync(join(pkgDir, "dist", "index.mjs"))],
  });
  const browser = startChromium(page.url);
  let timer;
  try {
    const outcome = await Promise.race([
      page.result,
      new Promise((resolve) => (timer = setTimeout(() => resolve("timeout after 60 s"), 60_000))),
      browser.exited.then((code) => `chromium exited with ${code}`),
    ]);
    if (outcome !== "main:ok worker:ok") throw new Error(`browser test of ${label} failed: ${outcome}`);
    console.log(`browser: ${label} in headless Chromium, main thread and module worker: ok`);
  } finally {
    clearTimeout(timer);
    await browser.stop();
    page.close();
  }
}
