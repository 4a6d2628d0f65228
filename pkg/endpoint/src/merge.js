// Merging options into defaults. This runs on JavaScript object graphs whose
// identities must survive (request.agent, Buffers and streams as data), so it
// stays on this side of the WebAssembly boundary: BENCHMARKS.md has the
// measurement. The rules are core's (strata_core::endpoint::merge) and the
// Rust tests state them with exact outputs. Own keys are walked with `for ... in`
// plus `hasOwnProperty` rather than `Object.keys` (no array per object): the
// merge row went from 2.3x to 3.4x upstream with that and `splitRoute`.

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
  for (const name in headers) {
    if (!Object.prototype.hasOwnProperty.call(headers, name)) continue;
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
  for (const key in options) {
    if (!Object.prototype.hasOwnProperty.call(options, key)) continue;
    const value = options[key];
    if (value === undefined) delete target[key];
    else target[key] = value;
  }
  return target;
}

function mergeInto(defaults, options) {
  const merged = Object.assign({}, defaults);
  for (const key in options) {
    if (!Object.prototype.hasOwnProperty.call(options, key)) continue;
    const value = options[key];
    if (typeof value === "object" && value !== null && key in defaults && isPlainObject(value)) {
      merged[key] = mergeInto(defaults[key], value);
    } else {
      merged[key] = value;
    }
  }
  return merged;
}

// "METHOD URL": the first two parts of `route.split(" ")`, without the array;
// a missing or empty URL part makes the first part the URL.
function splitRoute(route) {
  const space = route.indexOf(" ");
  if (space === -1) return { url: route };
  const end = route.indexOf(" ", space + 1);
  const url = route.slice(space + 1, end === -1 ? route.length : end);
  return url ? { method: route.slice(0, space), url } : { url: route.slice(0, space) };
}

/** `endpoint.merge`: defaults + route + options, not parsed. */
export function merge(defaults, route, options) {
  let given;
  if (typeof route === "string") {
    given = assignDefined(splitRoute(route), options);
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
