// Event names: the list is generated from @octokit/openapi-webhooks-types
// (scripts/generate.mjs, the same list as strata_core::webhooks, which the
// build checks); the validation rules are strata_core::webhooks'.
import { EVENT_NAMES } from "./event-names.js";
import { EventNameCheck, wasm } from "./wasm.js";

/** Every event name and `event.action` combination GitHub sends. */
export const emitterEventNames = EVENT_NAMES;

/**
 * Throws for `*`, `error` and (unless `onUnknownEventName` is "warn" or
 * "ignore") names GitHub does not send.
 */
export function validateEventName(eventName, options = {}) {
  if (typeof eventName !== "string") {
    throw new TypeError("eventName must be of type string");
  }
  const check = wasm().webhooks_check_event_name(eventName);
  if (check === EventNameCheck.Known) return;
  const message = wasm().webhooks_event_name_message(eventName);
  if (check !== EventNameCheck.Unknown) throw new TypeError(message);
  if (options.onUnknownEventName === "ignore") return;
  if (options.onUnknownEventName === "warn") {
    (options.log || console).warn(message);
    return;
  }
  throw new TypeError(message);
}
