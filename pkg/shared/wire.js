// The length-prefixed wire format shared with wasm/src/wire.rs (every package): values are
// written with string concatenation only (lengths are JavaScript lengths,
// UTF-16 code units), so crossing into WebAssembly is one string each way.

/** `s<len>:<text>` */
export function wireString(text) {
  return "s" + text.length + ":" + text;
}

/** A parameter value as the URL template expander reads it. */
export function wireValue(value) {
  if (value === undefined || value === null) return "n";
  switch (typeof value) {
    case "string":
      return "s" + value.length + ":" + value;
    case "number":
    case "boolean":
    case "bigint":
      return wireString(String(value));
    case "symbol":
      return "m0:";
  }
  if (Array.isArray(value)) {
    let out = "l" + value.length + ":";
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      out += item === undefined || item === null ? "n" : wireString(String(item));
    }
    return out;
  }
  const keys = Object.keys(value);
  let out = "m" + keys.length + ":";
  for (const key of keys) {
    const item = value[key];
    out += wireString(key) + (item === undefined || item === null ? "n" : wireString(String(item)));
  }
  return out;
}

/** `l<count>:` followed by strings. */
export function wireStrings(list) {
  let out = "l" + list.length + ":";
  for (const item of list) out += wireString(String(item));
  return out;
}

/** Reads what Rust wrote; `position` is advanced on the returned reader. */
export function wireReader(text, position = 0) {
  const reader = {
    position,
    string() {
      const colon = text.indexOf(":", reader.position);
      const length = Number(text.slice(reader.position + 1, colon));
      reader.position = colon + 1 + length;
      return text.slice(colon + 1, reader.position);
    },
    strings() {
      const colon = text.indexOf(":", reader.position);
      const count = Number(text.slice(reader.position + 1, colon));
      reader.position = colon + 1;
      const list = [];
      for (let i = 0; i < count; i++) list.push(reader.string());
      return list;
    },
  };
  return reader;
}

/** Reads a whole wire list `l<count>:` of strings. */
export function readList(text) {
  return wireReader(text).strings();
}
