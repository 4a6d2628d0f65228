// The JavaScript path: the same receiver as the Rust Worker, written on
// @strata/webhooks' web middleware (which runs strata-core as wasm).
// Same variables: GITHUB_WEBHOOK_SECRET, GITHUB_WEBHOOK_ADDITIONAL_SECRETS,
// FORWARD_URL, EVENTS, WEBHOOK_PATH.
import { Webhooks, createWebMiddleware } from "@strata/webhooks";
import { nextStep } from "./retry.js";

const FORWARDED = /^(x-github-|x-hub-signature|content-type$|user-agent$)/i;
const ATTEMPTS = 3;
const MAX_PAYLOAD_BYTES = 25 * 1024 * 1024;

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
    const next = nextStep(status, attempt, ATTEMPTS);
    if (next === "delivered") return console.log(`forwarded: ${name} delivery ${id} after ${attempt} attempt(s)`);
    if (next === "give up") return console.error(`NOT forwarded, gave up: ${name} delivery ${id} (last: ${status || "unreachable"})`);
    await new Promise((resolve) => setTimeout(resolve, next));
  }
}

/**
 * Reads the body, or stops at `limit + 1` bytes and returns `null`: an
 * oversized body is never held in full (a Worker has 128 MB).
 */
async function readBody(request, limit) {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      // Left unread, not cancelled: the runtime discards the rest.
      reader.releaseLock();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

export default {
  async fetch(request, env, context) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return Response.json({ status: "ok", version: "strata-worker-js" });
    const receiver = receiverFor(env);
    const declared = Number(request.headers.get("content-length"));
    // Not a delivery, or too large by its own account: the middleware answers
    // from the headers alone.
    if (request.method !== "POST" || declared > MAX_PAYLOAD_BYTES) return receiver.middleware(request);
    const body = await readBody(request, MAX_PAYLOAD_BYTES);
    const headers = new Headers(request.headers);
    // Too large while reading: the middleware answers 413 from the length alone.
    if (body === null) headers.set("content-length", String(MAX_PAYLOAD_BYTES + 1));
    else headers.delete("content-length");
    const response = await receiver.middleware(new Request(request.url, { method: "POST", headers, body }));
    if (response.status === 200 && receiver.wanted && env.FORWARD_URL) {
      const forwarded = [...request.headers].filter(([name]) => FORWARDED.test(name));
      const event = request.headers.get("x-github-event");
      context.waitUntil(forward(env.FORWARD_URL, forwarded, body, event, request.headers.get("x-github-delivery")));
    }
    return response;
  },
};
