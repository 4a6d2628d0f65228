// The embedded WebAssembly is a string with one character per byte
// (U+0100 + byte, see build.mjs); this turns it back into bytes.
export function decodeWasmText(text) {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i) - 0x100;
  return bytes;
}
