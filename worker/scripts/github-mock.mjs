// A local stand-in for the part of GitHub's REST API the redelivery run
// uses (GitHub itself is unreachable from the tests), as documented:
//   GET  /app/hook/deliveries                                    (app JWT)
//   POST /app/hook/deliveries/{delivery_id}/attempts              (app JWT)
//   GET  /repos/{owner}/{repo}/hooks/{hook_id}/deliveries         (token)
//   POST /repos/{owner}/{repo}/hooks/{hook_id}/deliveries/{id}/attempts
// Listings are newest first, `per_page` deliveries a page (capped by
// `pageSize` here so that few deliveries make several pages), with a
// `Link: <…&cursor=…>; rel="next"` header. The app JWT is checked as GitHub
// does: RS256 with the app's public key, `iss` the app id, `iat` in the
// past, `exp` at most 10 minutes after `iat` and in the future. A
// redelivery answers 202 and adds an attempt (same guid, `redelivery:
// true`) whose status `redeliveryStatus(guid)` picks. Every request is
// recorded.
import { createPublicKey, verify } from "node:crypto";
import { createServer } from "node:http";

function base64url(text) {
  return Buffer.from(text, "base64url");
}

/** Checks an app JWT; returns null when valid, else why not. */
function jwtProblem(token, { appId, publicKeyPem }) {
  const parts = token.split(".");
  if (parts.length !== 3) return "not a JWT";
  const [header, claims, signature] = parts;
  let decodedHeader;
  let decodedClaims;
  try {
    decodedHeader = JSON.parse(base64url(header).toString());
    decodedClaims = JSON.parse(base64url(claims).toString());
  } catch {
    return "undecodable";
  }
  if (decodedHeader.alg !== "RS256") return "alg is not RS256";
  const valid = verify("sha256", Buffer.from(`${header}.${claims}`), createPublicKey(publicKeyPem), base64url(signature));
  if (!valid) return "bad signature";
  const now = Math.floor(Date.now() / 1000);
  if (String(decodedClaims.iss) !== String(appId)) return "wrong iss";
  if (!(decodedClaims.iat <= now)) return "iat in the future";
  if (!(decodedClaims.exp > now && decodedClaims.exp - decodedClaims.iat <= 600)) return "bad exp";
  return null;
}

/**
 * Starts the mock. `deliveries` (newest first or not: they are sorted)
 * are the attempts; `auth` is `{ appId, publicKeyPem }` for app routes and
 * `{ token, hook: "repos/o/r/hooks/1" }` for the repository form.
 */
export async function startGitHubMock({ deliveries, app, token, pageSize = 3, redeliveryStatus = () => 200 }) {
  const requests = [];
  const redeliveries = [];
  let nextId = 900_000;
  const sorted = () => [...deliveries].sort((a, b) => Date.parse(b.delivered_at) - Date.parse(a.delivered_at) || b.id - a.id);
  const server = createServer((request, response) => {
    const url = new URL(request.url, "http://mock");
    const record = { method: request.method, path: url.pathname, query: url.search, headers: request.headers };
    requests.push(record);
    const reply = (status, body, headers = {}) => {
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
    };
    const authorization = String(request.headers.authorization || "");
    let prefix;
    if (url.pathname.startsWith("/app/hook/deliveries")) {
      if (!app) return reply(404, { message: "Not Found" });
      const problem = authorization.startsWith("Bearer ") ? jwtProblem(authorization.slice(7), app) : "no bearer token";
      if (problem) return reply(401, { message: `A JSON web token could not be decoded (${problem})` });
      prefix = "/app/hook/deliveries";
    } else if (token && url.pathname.startsWith(`/${token.hook}/deliveries`)) {
      if (authorization !== `Bearer ${token.token}`) return reply(401, { message: "Bad credentials" });
      prefix = `/${token.hook}/deliveries`;
    } else {
      return reply(404, { message: "Not Found" });
    }
    const rest = url.pathname.slice(prefix.length);
    if (request.method === "GET" && rest === "") {
      const perPage = Math.min(Number(url.searchParams.get("per_page") || 30), pageSize);
      const cursor = url.searchParams.get("cursor");
      const all = sorted();
      const start = cursor ? Number(cursor.replace(/^v1_/, "")) : 0;
      const page = all.slice(start, start + perPage);
      const headers = {};
      if (start + perPage < all.length) {
        headers.link = `<http://${request.headers.host}${prefix}?per_page=${url.searchParams.get("per_page")}&cursor=v1_${start + perPage}>; rel="next"`;
      }
      return reply(200, page, headers);
    }
    const attempt = /^\/(\d+)\/attempts$/.exec(rest);
    if (request.method === "POST" && attempt) {
      const original = deliveries.find((delivery) => delivery.id === Number(attempt[1]));
      if (!original) return reply(404, { message: "Not Found" });
      redeliveries.push(original.guid);
      const status = redeliveryStatus(original.guid);
      deliveries.push({ ...original, id: nextId++, delivered_at: new Date().toISOString(), redelivery: true, status_code: status, status: status === 200 ? "OK" : `Invalid HTTP Response: ${status}` });
      return reply(202, {});
    }
    return reply(404, { message: "Not Found" });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    redeliveries,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** An attempt as GitHub lists it, `minutesAgo` minutes ago. */
export function attempt(id, guid, minutesAgo, statusCode, { event = "push", action = null, redelivery = false } = {}) {
  return {
    id,
    guid,
    delivered_at: new Date(Date.now() - minutesAgo * 60_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    redelivery,
    duration: 0.31,
    status: statusCode === 200 ? "OK" : statusCode === 0 ? "Timed out" : `Invalid HTTP Response: ${statusCode}`,
    status_code: statusCode,
    event,
    action,
    installation_id: 123,
    repository_id: 456,
    throttled_at: null,
  };
}
