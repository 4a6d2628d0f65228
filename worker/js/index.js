// The JavaScript path: the same receiver as the Rust Worker, written on
// @strata/webhooks' web middleware (which runs strata-core as wasm).
// Same variables: GITHUB_WEBHOOK_SECRET, GITHUB_WEBHOOK_ADDITIONAL_SECRETS,
// FORWARD_URL, EVENTS, WEBHOOK_PATH.
import { Webhooks, createWebMiddleware } from "@strata/webhooks";

const FORWARDED = /^(x-github-|x-hub-signature|content-type$|user-agent$)/i;
const ATTEMPTS = 3;

function list(value) {
  return String(value || "")
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

/**
 * A Webhooks instance and its web middleware for one request: the handler
 * marks this request's delivery as wanted, so concurrent deliveries (even
 * redeliveries with the same id) never see each other's flags.
 */
function receiverFor(env) {
  const webhooks = new Webhooks({
    secret: env.GITHUB_WEBHOOK_SECRET,
    additionalSecrets: list(env.GITHUB_WEBHOOK_ADDITIONAL_SECRETS),
  });
  const receiver = { wanted: false, path: env.WEBHOOK_PATH || "/api/github/webhooks" };
  const events = list(env.EVENTS);
  const mark = () => {
    receiver.wanted = true;
  };
  if (events.length === 0 || events.includes("*")) webhooks.onAny(mark);
  else webhooks.on(events, mark);
  receiver.middleware = createWebMiddleware(webhooks, { path: receiver.path });
  return receiver;
}

async function forward(url, headers, body, name, id) {
  for (let attempt = 1; ; attempt++) {
    let status = 0;
    try {
      status = (await fetch(url, { method: "POST", headers, body })).status;
    } catch {
      status = 0;
    }
    if (status >= 200 && status < 300) return console.log(`forwarded: ${name} delivery ${id} after ${attempt} attempt(s)`);
    const transient = status === 0 || status === 408 || status === 429 || status >= 500;
    if (!transient || attempt >= ATTEMPTS) return console.error(`NOT forwarded, gave up: ${name} delivery ${id} (last: ${status || "unreachable"})`);
    await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** (attempt - 1)));
  }
}

export default {
  async fetch(request, env, context) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok", version: "strata-worker-js" });
    const receiver = receiverFor(env);
    const id = request.headers.get("x-github-delivery");
    const copy = request.method === "POST" ? request.clone() : undefined;
    const response = await receiver.middleware(request);
    if (response.status === 200 && receiver.wanted && env.FORWARD_URL) {
      const headers = [...request.headers].filter(([name]) => FORWARDED.test(name));
      const body = await copy.arrayBuffer();
      context.waitUntil(forward(env.FORWARD_URL, headers, body, request.headers.get("x-github-event"), id));
    }
    return response;
  },
};
