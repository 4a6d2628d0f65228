// @strata/endpoint: the exact API of @octokit/endpoint over strata-core's
// request-options builder, compiled to WebAssembly.
//
// What crosses into WebAssembly (see BENCHMARKS.md for why it is this way):
// - once per distinct (method, url): the route plan (upper-cased method,
//   where unconsumed parameters go, which names the URL consumes and reads);
// - once per call: one string with the base URL, the accept header, the
//   media type and only the values the URL needs; one string back with the
//   URL and, when the media type rewrote it, the accept header.
// Body values never cross: the body is assembled here from the plan.

import { getUserAgent } from "universal-user-agent";

import { merge, isPlainObject } from "./merge.js";
import { VERSION } from "../build/version.js";
import { onInstanceReset, wasm } from "./wasm.js";
import { wireReader, wireString, wireStrings, wireValue } from "../../shared/wire.js";

export { VERSION, isPlainObject };

const NOT_PARAMETERS = new Set(["method", "baseUrl", "url", "headers", "request", "mediaType"]);
const PLAN_CACHE_LIMIT = 1024;
// method -> url -> plan; two levels so lookups hash the caller's (usually
// literal, hash-cached) strings instead of a new concatenation.
const plans = new Map();
let planCount = 0;
// Plans live in the instance: a replaced instance (after a panic) has none.
onInstanceReset(() => {
  plans.clear();
  planCount = 0;
});

function planFor(method, url) {
  let byUrl = plans.get(method);
  if (byUrl === undefined) {
    byUrl = new Map();
    plans.set(method, byUrl);
  }
  let plan = byUrl.get(url);
  if (plan !== undefined) return plan;
  const core = wasm();
  if (planCount >= PLAN_CACHE_LIMIT) {
    plans.clear();
    plans.set(method, byUrl);
    byUrl.clear();
    planCount = 0;
    core.endpoint_reset();
  }
  const text = core.endpoint_plan(method, url);
  const colon = text.indexOf(":");
  const reader = wireReader(text, colon + 1);
  plan = {
    index: Number(text.slice(0, colon)),
    method: reader.string(),
    toQuery: reader.string() === "q",
    emptyBody: reader.string() === "1",
    contentType: reader.string(),
    consumed: new Set(reader.strings()),
    lookup: reader.strings(),
  };
  byUrl.set(url, plan);
  planCount++;
  return plan;
}

function setOwn(object, key, value) {
  if (key === "__proto__") Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/** `endpoint.parse`: merged options to request options. */
function parse(options) {
  if (typeof options.method !== "string") {
    throw new TypeError("options.method must be a string, got " + typeof options.method);
  }
  const url = options.url;
  const plan = planFor(options.method, typeof url === "string" ? url : url ? String(url) : "");
  const headers = Object.assign({}, options.headers);
  const mediaType = options.mediaType || {};
  const format = mediaType.format ? String(mediaType.format) : "";
  const previews = Array.isArray(mediaType.previews) ? mediaType.previews : [];

  // The accept header can only change when the media type asks for it
  // (strata_core::endpoint::accept::rewrite); otherwise it is not sent.
  const accept = headers.accept;
  const rewritesAccept = (format !== "" || previews.length > 0) && typeof accept === "string";
  let payload =
    wireString("" + options.baseUrl) +
    (rewritesAccept ? wireString(accept) : "n") +
    wireString(format) +
    (previews.length ? wireStrings(previews) : "l0:");
  for (const name of plan.lookup) {
    payload += NOT_PARAMETERS.has(name) || !Object.prototype.hasOwnProperty.call(options, name) ? "n" : wireValue(options[name]);
  }

  let body;
  let bodyObject;
  for (const key in options) {
    if (!Object.prototype.hasOwnProperty.call(options, key) || NOT_PARAMETERS.has(key) || plan.consumed.has(key)) continue;
    const value = options[key];
    if (plan.toQuery) {
      payload += wireString(key) + wireString(String(value));
    } else if (key === "data") {
      body = value;
      bodyObject = null;
    } else if (bodyObject !== null) {
      if (bodyObject === undefined) bodyObject = {};
      setOwn(bodyObject, key, value);
    }
  }
  if (bodyObject) body = bodyObject;

  let rendered;
  try {
    rendered = wasm().endpoint_url(plan.index, payload);
  } catch (error) {
    // strata_core::endpoint::EndpointError::MalformedUri: the error class
    // upstream's encodeURIComponent throws in the same place.
    if (error instanceof Error && error.message.startsWith("URI malformed")) throw new URIError(error.message);
    throw error;
  }
  let finalUrl;
  if (rendered.charCodeAt(0) === 49 /* "1": accept rewritten */) {
    const reader = wireReader(rendered, 1);
    headers.accept = reader.string();
    finalUrl = rendered.slice(reader.position);
  } else {
    finalUrl = rendered.slice(1);
  }

  if (body !== undefined && !headers["content-type"]) headers["content-type"] = plan.contentType;
  if (body === undefined && plan.emptyBody) body = "";

  const result = { method: plan.method, url: finalUrl, headers };
  if (body !== undefined) result.body = body;
  if (options.request) result.request = options.request;
  return result;
}

function withDefaults(oldDefaults, newDefaults) {
  const DEFAULTS = merge(oldDefaults, newDefaults);
  function endpoint(route, options) {
    return parse(merge(DEFAULTS, route, options));
  }
  endpoint.DEFAULTS = DEFAULTS;
  endpoint.defaults = (options) => withDefaults(DEFAULTS, options);
  endpoint.merge = (route, options) => merge(DEFAULTS, route, options);
  endpoint.parse = parse;
  return endpoint;
}

/** The endpoint function with GitHub's defaults. */
export const endpoint = withDefaults(null, {
  method: "GET",
  baseUrl: "https://api.github.com",
  headers: {
    accept: "application/vnd.github.v3+json",
    "user-agent": `strata-endpoint.js/${VERSION} ${getUserAgent()}`,
  },
  mediaType: { format: "" },
});
