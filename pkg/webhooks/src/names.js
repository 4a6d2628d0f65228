// Event names: the list and the validation rules are strata_core::webhooks'.
import { EVENT_NAMES } from "../build/event-names.js";
import { wasm } from "./wasm.js";

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
  const verdict = wasm().webhooks_validate_event_name(eventName);
  if (verdict === "") return;
  const colon = verdict.indexOf(":");
  const kind = verdict.slice(0, colon);
  const message = verdict.slice(colon + 1);
  if (kind !== "unknown") throw new TypeError(message);
  if (options.onUnknownEventName === "ignore") return;
  if (options.onUnknownEventName === "warn") {
    (options.log || console).warn(message);
    return;
  }
  throw new TypeError(message);
}
