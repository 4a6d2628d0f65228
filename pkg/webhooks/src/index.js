// @strata/webhooks: the API of @octokit/webhooks over strata_core::webhooks
// compiled to WebAssembly (signatures, event names, listener routing, every
// middleware answer). Listener bookkeeping and promise plumbing stay in
// JavaScript, where the handlers are.
import { createEventHandler } from "./event-handler.js";
import { createLogger } from "./logger.js";
import { sign, verify } from "./signature.js";
import { verifyAndReceive } from "./verify-and-receive.js";

export { createEventHandler } from "./event-handler.js";
export { createNodeMiddleware, createWebMiddleware } from "./middleware.js";
export { emitterEventNames, validateEventName } from "./names.js";
export { createRelayClient } from "./relay.js";
export { VERSION } from "../build/version.js";

import { wasm } from "./wasm.js";
/** Verifies, receives and dispatches GitHub webhook deliveries. */
export class Webhooks {
  constructor(options) {
    if (!options || !options.secret) {
      throw new Error("[@strata/webhooks] options.secret required");
    }
    const state = {
      eventHandler: createEventHandler(options),
      secret: options.secret,
      additionalSecrets: options.additionalSecrets,
      hooks: {},
      log: createLogger(options.log),
    };
    this.sign = (payload) => sign(options.secret, payload);
    this.verify = (eventPayload, signature) => verify(options.secret, eventPayload, signature);
    this.on = state.eventHandler.on;
    this.onAny = state.eventHandler.onAny;
    this.onError = state.eventHandler.onError;
    this.removeListener = state.eventHandler.removeListener;
    this.receive = state.eventHandler.receive;
    this.verifyAndReceive = (event) => verifyAndReceive(state, event);
  }
}
