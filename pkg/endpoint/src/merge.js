// Merging options into defaults. This runs on JavaScript object graphs whose
// identities must survive (request.agent, Buffers and streams as data), so it
// stays on this side of the WebAssembly boundary: BENCHMARKS.md has the
// measurement. The rules are core's (strata_core::endpoint::merge) and the
// Rust tests state them with exact outputs.

/** Plain objects are merged deeply; everything else is a value. */
export function isPlainObject(value) {
  if (typeof value !== "object" || value === null) return false;
  if (Object.prototype.toString.call(value) !== "[object Object]") return false;
  const proto = Object.getPrototypeOf(value);
  if (proto === null || proto === Object.prototype) return true;
  const constructor = Object.prototype.hasOwnProperty.call(proto, "constructor") && proto.constructor;
  return typeof constructor === "function" && constructor instanceof constructor;
}

// Header names are lower-cased (a later spelling wins) and undefined values
// dropped, in one pass: an undefined value deletes what an earlier spelling set.
function lowercaseHeaderNames(headers) {
  const lowered = {};
  if (!headers) return lowered;
  for (const name of Object.keys(headers)) {
    const value = headers[name];
    if (value === undefined) delete lowered[name.toLowerCase()];
    else lowered[name.toLowerCase()] = value;
  }
  return lowered;
}

// Copies own enumerable options over `target`; an undefined value deletes
// the key (so `{ method: undefined }` falls back to the default method).
function assignDefined(target, options) {
  if (options === null || options === undefined) return target;
  for (const key of Object.keys(options)) {
    const value = options[key];
    if (value === undefined) delete target[key];
    else target[key] = value;
  }
  return target;
}

function mergeInto(defaults, options) {
  const merged = Object.assign({}, defaults);
  for (const key of Object.keys(options)) {
    const value = options[key];
    if (isPlainObject(value) && key in defaults) {
      merged[key] = mergeInto(defaults[key], value);
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

/** `endpoint.merge`: defaults + route + options, not parsed. */
export function merge(defaults, route, options) {
  let given;
  if (typeof route === "string") {
    const [method, url] = route.split(" ");
    given = assignDefined(url ? { method, url } : { url: method }, options);
  } else {
    given = assignDefined({}, route);
  }
  given.headers = lowercaseHeaderNames(given.headers);
  const merged = mergeInto(defaults || {}, given);
  if (given.url === "/graphql") combinePreviews(defaults, merged);
  return merged;
}

function combinePreviews(defaults, merged) {
  const inherited = defaults && defaults.mediaType.previews;
  if (inherited && inherited.length) {
    const own = merged.mediaType.previews;
    merged.mediaType.previews = inherited.filter((preview) => !own.includes(preview)).concat(own);
  }
  merged.mediaType.previews = (merged.mediaType.previews || []).map((preview) => preview.replace("-preview", ""));
}
