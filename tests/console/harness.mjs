// What the console tests share: the `strata` binary and Chromium they use,
// a free port, a running service with its GraphQL client, and a page that
// records every console error, CSP violation and failed request.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The debug `strata` built by tests/console.sh (STRATA_BIN overrides). */
export const bin = process.env.STRATA_BIN || join(process.env.CARGO_TARGET_DIR || join(process.env.HOME, ".cache/strata-target"), "debug/strata");

/** A TCP port nothing listens on now (below the ephemeral range). */
export { freePort } from "../../pkg/shared/wrangler.mjs";

/**
 * Writes `yaml` to `<work>/svc.yaml`, starts `strata` on it and waits for
 * /health. `base` is the service's URL (with its pathPrefix), `api` runs
 * one GraphQL request (throws on errors), `stop` ends the process.
 */
export async function startStrata(work, yaml, { port, prefix = "" }) {
  writeFileSync(join(work, "svc.yaml"), yaml);
  const base = `http://127.0.0.1:${port}${prefix}`;
  const child = spawn(bin, [], { env: { ...process.env, SVC_YAML: join(work, "svc.yaml") }, stdio: ["ignore", "inherit", "inherit"] });
  let exited = null;
  child.on("exit", (code, signal) => (exited = signal ?? code));
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch {}
    if (exited !== null) throw new Error(`strata exited (${exited}) before it served ${base}/health`);
    if (i > 300) throw new Error(`strata did not serve ${base}/health within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const api = async (query, variables = {}) => {
    const response = await fetch(`${base}/v2/service`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }) });
    const answer = await response.json();
    if (answer.errors) throw new Error(JSON.stringify(answer.errors));
    return answer.data;
  };
  return { base, api, child, stop: () => child.kill("SIGTERM") };
}

/**
 * Debian's headless Chromium (CHROMIUM overrides /usr/bin/chromium), with a
 * temporary directory of its own (`TMPDIR`), removed once the browser is
 * gone: Chromium leaves its singleton socket's directory there.
 */
export async function launchChromium() {
  const scratch = mkdtempSync(join(tmpdir(), "strata-chromium-"));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox"],
    env: { ...process.env, TMPDIR: scratch },
  });
  browser.on("disconnected", () => rmSync(scratch, { recursive: true, force: true }));
  return browser;
}

/**
 * A 1280×900 page whose loads may take two minutes, its waits one; `problems`
 * collects what must stay empty. A request is a
 * problem when it fails, except one the browser aborted because the page
 * navigated after it started (a poll cut by `page.goto`, which Chromium
 * reports as net::ERR_ABORTED). A `page.goto` to another route of the same
 * page (only the `#` part differs) makes no request but is a navigation of
 * the main frame all the same (`framenavigated`), and CI saw a console query
 * aborted right after two of them: the console never aborts a request
 * itself, so only the browser does. Any other failure, an abort without a
 * navigation included, still counts.
 */
export async function watchedPage(browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // These tests assert what the console shows, never how fast: a page load
  // is given two minutes and a wait one, not playwright's 30 s. CI saw the
  // first load of a fresh Chromium miss 30 s on a loaded two-core machine
  // (every lane running beside it), the service's own assets served in
  // milliseconds just before. A wait given its own time keeps it.
  page.setDefaultNavigationTimeout(120_000);
  page.setDefaultTimeout(60_000);
  const problems = [];
  let navigations = 0;
  // A main-frame navigation requested and not yet committed: the page it
  // leaves still runs (its polls start requests), and the commit aborts
  // them — on a loaded machine before "framenavigated" is seen.
  let leaving = false;
  const navigationsAtStart = new WeakMap();
  page.on("request", (request) => {
    const navigation = request.isNavigationRequest() && request.frame() === page.mainFrame();
    if (navigation) {
      navigations += 1;
      leaving = true;
    }
    // A request of the page being left counts as started before its
    // navigation: that navigation cuts it.
    navigationsAtStart.set(request, leaving && !navigation ? navigations - 1 : navigations);
  });
  page.on("framenavigated", (frame) => {
    if (frame === page.mainFrame()) {
      navigations += 1;
      leaving = false;
    }
  });
  page.on("console", (message) => {
    if (message.type() === "error" || message.type() === "warning") problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("requestfailed", (request) => {
    const error = request.failure()?.errorText ?? "";
    const cutByNavigation = error === "net::ERR_ABORTED" && navigations > (navigationsAtStart.get(request) ?? navigations);
    if (!cutByNavigation) problems.push(`request failed: ${request.url()} (${error})`);
  });
  return { page, problems };
}

/** Prints and counts a passed check. */
/**
 * A test's cleanup, never failing on its own: the browser closed, the
 * service stopped (given a moment to let go of its connections), then its
 * database dropped.
 */
export async function cleanUp({ browser, service, drop }) {
  await browser?.close();
  service.stop();
  await new Promise((r) => setTimeout(r, 200));
  drop();
}

export function checker() {
  const checks = [];
  const ok = (name) => {
    checks.push(name);
    console.log(`ok - ${name}`);
  };
  return { checks, ok };
}

/**
 * A database of its own, made anew, on the PostgreSQL with default settings
 * of tests/servers.sh (STRATA_TEST_PG_DEFAULT_URL): `dataSource` is its URL,
 * `psql(sql)` runs SQL there and answers its rows as text (`-At`), `drop()`
 * removes it (never failing: a test's cleanup). Without the variable the
 * test `what` says it is skipped and ends, unless CI is set.
 */
export function freshPostgresDatabase(database, what) {
  const server = process.env.STRATA_TEST_PG_DEFAULT_URL;
  if (!server) {
    if (process.env.CI) throw new Error("STRATA_TEST_PG_DEFAULT_URL is not set: start the servers (tests/servers.sh) and source their env");
    console.log(`${what}: SKIPPED (no STRATA_TEST_PG_DEFAULT_URL; start tests/servers.sh and source its env)`);
    process.exit(0);
  }
  const psqlPath = process.env.STRATA_TEST_PG_BIN ? join(process.env.STRATA_TEST_PG_BIN, "psql") : "psql";
  const run = (url, sql) =>
    execFileSync(psqlPath, ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], { env: { ...process.env, PGOPTIONS: "-c client_min_messages=warning" } }).toString().trim();
  const url = new URL(server);
  url.pathname = `/${database}`;
  const dataSource = url.toString();
  run(server, `drop database if exists ${database} with (force)`);
  run(server, `create database ${database}`);
  const drop = () => {
    try {
      run(server, `drop database if exists ${database} with (force)`);
    } catch {}
  };
  return { dataSource, psql: (sql) => run(dataSource, sql), drop };
}
