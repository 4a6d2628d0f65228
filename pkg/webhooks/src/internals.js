// @strata/webhooks/internals: the building blocks behind the public API, with
// the names and signatures of @octokit/webhooks' modules (its own unit tests
// run against these). Not covered by semver.
export {
  receiverOn,
  receiverOnAny,
  receiverOnError,
  receiverHandle,
  removeListener,
  wrapErrorHandler,
  createEventHandler,
} from "./event-handler.js";
export { createLogger } from "./logger.js";
export { validateEventName } from "./names.js";
export { concatUint8Array, getPayload, getPayloadFromRequestStream, normalizeTrailingSlashes } from "./middleware.js";
export { verifyAndReceive } from "./verify-and-receive.js";
