// Loads the installed package in headless Chromium, as a browser ES module
// without a bundler, on the page's main thread and in a module Web Worker,
// and checks what endpoint() returns there.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

const CHECK = `
import { endpoint } from "/pkg/index.mjs";
export function check() {
  const options = endpoint("GET /repos/{owner}/{repo}/issues{?state}", { owner: "octokit", repo: "endpoint.js", state: "open", labels: "bug" });
  const expected = "https://api.github.com/repos/octokit/endpoint.js/issues?state=open&labels=bug";
  if (options.url !== expected) throw new Error("url " + options.url);
  if (options.headers["user-agent"] !== "strata-endpoint.js/" + __VERSION__ + " " + navigator.userAgent) throw new Error("user-agent " + options.headers["user-agent"]);
  return "ok";
}`;

const PAGE = `<!doctype html><meta charset="utf-8"><body><pre id="out">pending</pre>
<script type="module">
const out = document.getElementById("out");
const results = [];
try { results.push("main:" + (await import("/check.mjs")).check()); } catch (error) { results.push("main:" + error); }
out.textContent = "PARTIAL " + results.join(" ");
const worker = new Worker("/worker.mjs", { type: "module" });
worker.onmessage = (event) => { results.push("worker:" + event.data); out.textContent = "RESULT " + results.join(" "); };
worker.onerror = (event) => { results.push("worker:" + event.message); out.textContent = "RESULT " + results.join(" "); };
</script>`;

const WORKER = `import { check } from "/check.mjs";
let result;
try { result = check(); } catch (error) { result = String(error); }
postMessage(result);`;

function chromiumBinary() {
  return process.env.STRATA_CHROMIUM || "chromium";
}

export async function runBrowserTest(project) {
  const pkgDir = join(project, "node_modules", "@strata", "endpoint");
  const version = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;
  const files = {
    "/": ["text/html", PAGE],
    "/check.mjs": ["text/javascript", CHECK.replace("__VERSION__", JSON.stringify(version))],
    "/worker.mjs": ["text/javascript", WORKER],
    "/pkg/index.mjs": ["text/javascript", readFileSync(join(pkgDir, "dist", "index.mjs"), "utf8")],
  };
  const server = createServer((request, response) => {
    const file = files[request.url];
    response.writeHead(file ? 200 : 404, { "content-type": file ? file[0] : "text/plain" });
    response.end(file ? file[1] : "not found");
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const dom = await new Promise((resolve, reject) => {
      execFile(chromiumBinary(), ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--virtual-time-budget=15000", "--dump-dom", url], { timeout: 90_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`chromium failed: ${error.message}\n${stderr}`)) : resolve(stdout));
    });
    const match = dom.match(/<pre id="out">RESULT ([^<]*)<\/pre>/);
    if (!match || match[1].trim() !== "main:ok worker:ok") {
      const partial = dom.match(/<pre id="out">([^<]*)<\/pre>/);
      if (partial) throw new Error(`browser test failed: ${partial[1]}`);
      throw new Error(`browser test failed: ${match ? match[1] : dom.slice(0, 2000)}`);
    }
    console.log("browser: headless Chromium, main thread and module worker: ok");
  } finally {
    server.close();
  }
}
