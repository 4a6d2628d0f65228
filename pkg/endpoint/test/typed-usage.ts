// Compiled with `tsc --noEmit` twice by scripts/test.mjs: against the packed
// package, and with the import changed to @octokit/endpoint, so both are
// known to accept the same typed code.
import { endpoint } from "@strata/endpoint";
import type { EndpointInterface, RequestOptions, EndpointDefaults } from "@octokit/types";

const fn: EndpointInterface = endpoint;
const options: RequestOptions = endpoint("GET /repos/{owner}/{repo}/issues", { owner: "octokit", repo: "endpoint.js", per_page: 10 });
const method: string = options.method;
const url: string = options.url;
const enterprise = endpoint.defaults({ baseUrl: "https://ghe.example.com/api/v3" });
const defaults: EndpointDefaults = enterprise.DEFAULTS;
const merged = enterprise.merge("GET /repos/{owner}/{repo}", { owner: "octokit", repo: "endpoint.js", mediaType: { format: "raw" } });
const parsed: RequestOptions = enterprise.parse({ ...enterprise.DEFAULTS, url: merged.url });
// @ts-expect-error: parse needs merged options, not a string
endpoint.parse("GET /");
export { fn, method, url, defaults, parsed };
