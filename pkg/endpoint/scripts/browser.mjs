// endpoint() in headless Chromium (see ../../shared/browser.mjs).
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { runBrowserCheck } from "../../shared/browser.mjs";

export async function runBrowserTest(project) {
  const { version } = JSON.parse(readFileSync(join(project, "node_modules", "@strata", "endpoint", "package.json"), "utf8"));
  const checkSource = `
import { endpoint } from "/pkg/index.mjs";
export async function check() {
  const options = endpoint("GET /repos/{owner}/{repo}/issues{?state}", { owner: "octokit", repo: "endpoint.js", state: "open", labels: "bug" });
  const expected = "https://api.github.com/repos/octokit/endpoint.js/issues?state=open&labels=bug";
  if (options.url !== expected) throw new Error("url " + options.url);
  if (options.headers["user-agent"] !== "strata-endpoint.js/${version} " + navigator.userAgent) throw new Error("user-agent " + options.headers["user-agent"]);
  return "ok";
}`;
  await runBrowserCheck({ project, packageName: "@strata/endpoint", checkSource, label: "@strata/endpoint" });
}
