// Behaviour cases with exact expected results. Every case is asserted
// against this package and, in differential.test.mjs, against
// @octokit/endpoint itself, so the expectations are upstream's behaviour.
export const USER_AGENT_PLACEHOLDER = "<user-agent>";

const json = "application/json; charset=utf-8";
const v3 = "application/vnd.github.v3+json";
const ua = USER_AGENT_PLACEHOLDER;

export const cases = [
  {
    name: "route with path and query template, extra parameters appended in order",
    route: "GET /repos/{owner}/{repo}/issues{?state,per_page}",
    options: { owner: "octokit", repo: "endpoint.js", state: "open", per_page: 100, labels: "bug,ui", sort: "created" },
    expected: {
      method: "GET",
      url: "https://api.github.com/repos/octokit/endpoint.js/issues?state=open&per_page=100&labels=bug%2Cui&sort=created",
      headers: { accept: v3, "user-agent": ua },
    },
  },
  {
    name: "legacy :name placeholders",
    route: "GET /repos/:owner/:repo/contents/:path",
    options: { owner: "o", repo: "r", path: "a b" },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r/contents/a%20b", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "exploded lists in a query expression are separate parameters",
    route: "GET /x{?list*}",
    options: { list: ["a", "b"] },
    expected: { method: "GET", url: "https://api.github.com/x?list=a&list=b", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "undefined variables write nothing, not even the operator or a separator",
    route: "GET /x{/a,b}{?c,d}",
    options: { b: "1" },
    expected: { method: "GET", url: "https://api.github.com/x/1", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "an exploded variable followed by another is not consumed, so it is also a query parameter",
    route: "GET /x{?a*,b}",
    options: { a: ["1", "2"], b: "3" },
    expected: { method: "GET", url: "https://api.github.com/x?a=1&a=2&b=3&a=1%2C2", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "a prefix variable also goes to the query",
    route: "GET /x/{v:3}",
    options: { v: "abcdef" },
    expected: { method: "GET", url: "https://api.github.com/x/abc?v=abcdef", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "null query parameter is written as null",
    route: "GET /x",
    options: { a: 1, b: null },
    expected: { method: "GET", url: "https://api.github.com/x?a=1&b=null", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "q keeps its plus signs",
    route: "GET /search/issues",
    options: { q: "repo:octokit/endpoint.js+is:open label:bug" },
    expected: {
      method: "GET",
      url: "https://api.github.com/search/issues?q=repo%3Aoctokit%2Fendpoint.js+is%3Aopen%20label%3Abug",
      headers: { accept: v3, "user-agent": ua },
    },
  },
  {
    name: "trailing slash of an expanded template is dropped",
    route: "GET /repos/{owner}/{repo}/",
    options: { owner: "o", repo: "r" },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "undefined placeholder leaves an empty segment",
    route: "GET /repos/{owner}/{repo}/branches/{branch}",
    options: { owner: "o", repo: "r" },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r/branches", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "mediaType.format rewrites the accept header",
    route: "GET /repos/{owner}/{repo}/pulls/{number}",
    options: { owner: "o", repo: "r", number: 1, mediaType: { format: "diff" } },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r/pulls/1", headers: { accept: "application/vnd.github.v3.diff", "user-agent": ua } },
  },
  {
    name: "previews rewrite accept for graphql only",
    route: "POST /graphql",
    options: { query: "{ viewer { login } }", mediaType: { previews: ["jean-grey", "symmetra"] } },
    expected: {
      method: "POST",
      url: "https://api.github.com/graphql",
      headers: {
        accept: "application/vnd.github.jean-grey-preview+json,application/vnd.github.symmetra-preview+json",
        "user-agent": ua,
        "content-type": json,
      },
      body: { query: "{ viewer { login } }" },
    },
  },
  {
    name: "previews on a REST route leave accept alone",
    route: "GET /repos/{owner}/{repo}",
    options: { owner: "o", repo: "r", mediaType: { previews: ["mercy"] } },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "application/octet-stream skips the rewrite",
    route: "GET /repos/{owner}/{repo}/releases/assets/{id}",
    options: { owner: "o", repo: "r", id: 7, headers: { Accept: "application/octet-stream" }, mediaType: { format: "raw" } },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r/releases/assets/7", headers: { accept: "application/octet-stream", "user-agent": ua } },
  },
  {
    name: "PUT without body gets an empty body",
    route: "PUT /user/starred/{owner}/{repo}",
    options: { owner: "o", repo: "r" },
    expected: { method: "PUT", url: "https://api.github.com/user/starred/o/r", headers: { accept: v3, "user-agent": ua }, body: "" },
  },
  {
    name: "PATCH without body gets an empty body, DELETE does not",
    route: "PATCH /x",
    options: {},
    expected: { method: "PATCH", url: "https://api.github.com/x", headers: { accept: v3, "user-agent": ua }, body: "" },
  },
  {
    name: "DELETE without body has no body",
    route: "DELETE /x/{id}",
    options: { id: 1 },
    expected: { method: "DELETE", url: "https://api.github.com/x/1", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "POST body from remaining parameters with the JSON content type",
    route: "POST /repos/{owner}/{repo}/issues",
    options: { owner: "o", repo: "r", title: "t", labels: ["bug"], milestone: 1 },
    expected: {
      method: "POST",
      url: "https://api.github.com/repos/o/r/issues",
      headers: { accept: v3, "user-agent": ua, "content-type": json },
      body: { title: "t", labels: ["bug"], milestone: 1 },
    },
  },
  {
    name: "data is the body as given, with explicit content type; query template for the rest",
    route: "POST https://uploads.github.com/repos/{owner}/{repo}/releases/{release_id}/assets{?name,label}",
    options: { owner: "o", repo: "r", release_id: 1, name: "a.zip", label: "A zip", data: "raw bytes", headers: { "Content-Type": "application/zip" } },
    expected: {
      method: "POST",
      url: "https://uploads.github.com/repos/o/r/releases/1/assets?name=a.zip&label=A%20zip",
      headers: { accept: v3, "user-agent": ua, "content-type": "application/zip" },
      body: "raw bytes",
    },
  },
  {
    name: "request option is returned as passed; header names lower-cased",
    route: "GET /",
    options: { request: { timeout: 5 }, headers: { Authorization: "token x" } },
    expected: { method: "GET", url: "https://api.github.com/", headers: { accept: v3, "user-agent": ua, authorization: "token x" }, request: { timeout: 5 } },
  },
  {
    name: "reserved expansion keeps slashes and existing escapes",
    route: "GET /repos/{owner}/{repo}/contents/{+path}",
    options: { owner: "o", repo: "r", path: "dir/sub dir/%20file.txt" },
    expected: { method: "GET", url: "https://api.github.com/repos/o/r/contents/dir/sub%20dir/%20file.txt", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "empty list in a query expression writes the name",
    route: "GET /x{?labels}",
    options: { labels: [] },
    expected: { method: "GET", url: "https://api.github.com/x?labels=", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "object values expand as name,value pairs",
    route: "GET /x{?keys}",
    options: { keys: { a: 1, b: "two words" } },
    expected: { method: "GET", url: "https://api.github.com/x?keys=a,1,b,two%20words", headers: { accept: v3, "user-agent": ua } },
  },
  {
    name: "non-ASCII values are UTF-8 percent-encoded",
    route: "GET /users/{user}",
    options: { user: "jürgen😀", note: "€" },
    expected: { method: "GET", url: "https://api.github.com/users/j%C3%BCrgen%F0%9F%98%80?note=%E2%82%AC", headers: { accept: v3, "user-agent": ua } },
  },
];
