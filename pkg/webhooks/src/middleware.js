// The Node and web middleware. What a request gets (path, method, content
// type, headers, size, and every status, body and header set) is decided by
// strata_core::webhooks::middleware; this file reads requests and writes
// responses for each platform, and runs the timeout race.
import { createLogger } from "./logger.js";
import { wireReader } from "../../shared/wire.js";
import { ReplyKind, RouteKind, wasm } from "./wasm.js";

export const DEFAULT_PATH = "/api/github/webhooks";
const DEFAULT_TIMEOUT = 9000;
const DEFAULT_MAX_BODY = 25 * 1024 * 1024;

/** A body over the limit, noticed while reading it. */
export class PayloadTooLargeError extends Error {}

/** Upstream's trailing-slash normalisation (core's rule). */
export function normalizeTrailingSlashes(path) {
  return wasm().webhooks_normalize_trailing_slashes(String(path));
}

/** Parses `r<status>:` + body + header list. */
function decodeReply(text) {
  const colon = text.indexOf(":");
  const status = Number(text.slice(0, colon));
  const reader = wireReader(text, colon + 1);
  const body = reader.string();
  const flat = reader.strings();
  const headers = {};
  for (let i = 0; i < flat.length; i += 2) headers[flat[i]] = flat[i + 1];
  return { status, body, headers };
}

let fixedReplies;
function replies() {
  if (!fixedReplies) {
    fixedReplies = {
      delivered: decodeReply(wasm().webhooks_reply(ReplyKind.Delivered, undefined, "", "", 0)),
      stillProcessing: decodeReply(wasm().webhooks_reply(ReplyKind.StillProcessing, undefined, "", "", 0)),
    };
  }
  return fixedReplies;
}

function optionalString(value) {
  return value === undefined || value === null ? undefined : String(value);
}

/** Concatenates chunks into one Uint8Array. */
export function concatUint8Array(data) {
  let total = 0;
  for (const chunk of data) total += chunk.length;
  const result = new Uint8Array(total);
  let offset = 0;
  for (const chunk of data) {
    result.set(chunk, offset);
    offset += chunk.length;
  }
  return result;
}

const decoder = new TextDecoder("utf-8", { fatal: false });

/** Reads a Node request's body (or a framework's parsed `body`/`rawBody`). */
export async function getPayload(request, maxBytes = Infinity) {
  if (typeof request.body === "object" && "rawBody" in request && request.rawBody instanceof Uint8Array) {
    return decoder.decode(request.rawBody);
  }
  if (typeof request.body === "string") return request.body;
  return decoder.decode(await getPayloadFromRequestStream(request, maxBytes));
}

/** Collects a Node request stream; rejects once it exceeds `maxBytes`. */
export function getPayloadFromRequestStream(request, maxBytes = Infinity) {
  return new Promise((resolve, reject) => {
    let data = [];
    let size = 0;
    request.on("error", (error) => reject(new AggregateError([error], error.message)));
    request.on("data", (chunk) => {
      if (data === null) return; // over the limit: the rest is read and dropped
      size += chunk.length;
      if (size > maxBytes) {
        data = null;
        reject(new PayloadTooLargeError("payload too large"));
        return;
      }
      data.push(chunk);
    });
    request.on("end", () => {
      if (data === null) return;
      const result = concatUint8Array(data);
      queueMicrotask(() => resolve(result));
    });
  });
}

async function readWebBody(request, maxBytes) {
  if (!request.body || maxBytes === Infinity) return request.text();
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel().catch(() => {});
      throw new PayloadTooLargeError("payload too large");
    }
    chunks.push(value);
  }
  return decoder.decode(concatUint8Array(chunks));
}

function firstError(error) {
  const errors = error && error.errors ? Array.from(error.errors) : [error];
  return errors[0] || error;
}

function createMiddleware({ platform, webhooks, options }) {
  const path = options.path === undefined ? DEFAULT_PATH : options.path;
  const log = options.log || createLogger();
  const timeout = options.timeout === undefined ? DEFAULT_TIMEOUT : options.timeout;
  const maxBytes = options.maxPayloadBytes === undefined ? DEFAULT_MAX_BODY : options.maxPayloadBytes;

  return async function strataWebhooksMiddleware(request, response, next) {
    const url = platform.url(request);
    let pathname;
    try {
      pathname = new URL(normalizeTrailingSlashes(url), "http://localhost").pathname;
    } catch {
      pathname = undefined;
    }
    const header = (name) => optionalString(platform.header(request, name));
    const contentLength = header("content-length");
    const head = [
      String(request.method),
      String(url),
      pathname,
      header("content-type"),
      header("x-github-event"),
      header("x-hub-signature-256"),
      header("x-github-delivery"),
      contentLength !== undefined && /^\d+$/.test(contentLength) ? Number(contentLength) : undefined,
      String(path),
      maxBytes === Infinity ? Number.MAX_SAFE_INTEGER : maxBytes,
    ];
    const route = wasm().webhooks_route(...head);
    if (route === RouteKind.NotOurs) {
      if (typeof next === "function") next();
      return platform.notOurs(response);
    }
    if (route === RouteKind.Reply) return platform.respond(decodeReply(wasm().webhooks_route_reply(...head)), response);

    const eventName = header("x-github-event");
    const signature = header("x-hub-signature-256");
    const id = header("x-github-delivery");
    log.debug(`${eventName} event received (id: ${id})`);

    let timedOut = false;
    let timer;
    const timeoutAnswer = new Promise((resolve) => {
      timer = setTimeout(() => {
        timedOut = true;
        resolve(platform.respond(replies().stillProcessing, response));
      }, timeout);
    });

    const processing = (async () => {
      try {
        const payload = await platform.payload(request, maxBytes);
        await webhooks.verifyAndReceive({ id, name: eventName, payload, signature });
        clearTimeout(timer);
        if (timedOut) return platform.notOurs(response);
        return platform.respond(replies().delivered, response);
      } catch (error) {
        clearTimeout(timer);
        if (timedOut) return platform.notOurs(response);
        if (error instanceof PayloadTooLargeError) {
          platform.closeAfterResponse(response);
          return platform.respond(decodeReply(wasm().webhooks_reply(ReplyKind.TooLarge, undefined, "", "", maxBytes)), response);
        }
        const first = firstError(error);
        const status = typeof first.status === "number" && first.status >= 100 && first.status <= 999 ? first.status : undefined;
        log.error(error);
        const reply = wasm().webhooks_reply(ReplyKind.Failed, status, String(first.name || "Error"), first.message ? String(first.message) : "", 0);
        const decoded = decodeReply(reply);
        if (first.status !== undefined && status === undefined) decoded.status = 500;
        return platform.respond(decoded, response);
      }
    })();
    return await Promise.race([timeoutAnswer, processing]);
  };
}

const encoder = new TextEncoder();

const nodePlatform = {
  url: (request) => request.url,
  // The unread rest of an oversized body is not worth keeping the connection for.
  closeAfterResponse: (response) => response.setHeader("connection", "close"),
  header: (request, name) => request.headers[name],
  payload: getPayload,
  notOurs: () => false,
  respond({ status, body, headers }, response) {
    response.writeHead(status, { ...headers, "content-length": String(encoder.encode(body).length) }).end(body);
    return true;
  },
};

const webPlatform = {
  url: (request) => request.url,
  closeAfterResponse: () => {},
  header: (request, name) => request.headers.get(name),
  payload: readWebBody,
  notOurs: () => new Response(null, { status: 200 }),
  respond({ status, body, headers }) {
    return new Response(body, { status, headers: { ...headers, "content-length": String(encoder.encode(body).length) } });
  },
};

/** A `(request, response, next?)` handler for `node:http` and Express-style servers. */
export function createNodeMiddleware(webhooks, options = {}) {
  return createMiddleware({ platform: nodePlatform, webhooks, options });
}

/** A `(request) => Response` handler for web-standard runtimes (Deno, Bun, workers). */
export function createWebMiddleware(webhooks, options = {}) {
  return createMiddleware({ platform: webPlatform, webhooks, options });
}
