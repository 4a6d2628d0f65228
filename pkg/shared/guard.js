// A Rust panic in the WebAssembly ends in a trap (RuntimeError) that leaves
// the instance unusable. Every binding is wrapped: on a trap, the panic's
// message is read, the instance replaced with a fresh one, and an Error with
// the message thrown, so the caller sees a clear error and the next call works.

export function guardBindings(bindings, { takePanic, resetState, onReset = () => {} }) {
  const guarded = {};
  for (const [name, fn] of Object.entries(bindings)) {
    guarded[name] = function (a, b, c, d, e, f, g, h, i, j) {
      try {
        return fn(a, b, c, d, e, f, g, h, i, j);
      } catch (error) {
        if (!(error instanceof WebAssembly.RuntimeError)) throw error;
        let message = "";
        try {
          message = takePanic();
        } catch {
          // the broken instance could not even report; its message is lost
        }
        resetState();
        onReset();
        throw new Error(`[strata] internal error in ${name}: ${message || error.message} (the WebAssembly instance was replaced)`);
      }
    };
  }
  return guarded;
}
