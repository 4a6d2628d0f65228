// Listener bookkeeping and promise plumbing: handlers are JavaScript
// functions, so this stays here. Which listeners a delivery reaches, and in
// which order, is strata_core::webhooks::listener_keys (cached per name and
// action).
import { createLogger } from "./logger.js";
import { validateEventName } from "./names.js";
import { readList } from "../../shared/wire.js";
import { wasm } from "./wasm.js";

const keyCache = new Map();
const KEY_CACHE_LIMIT = 4096;

function listenerKeys(name, action) {
  const cacheKey = action ? name + "\u0000" + action : name;
  let keys = keyCache.get(cacheKey);
  if (keys === undefined) {
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    keys = readList(wasm().webhooks_listener_keys(String(name), action ? String(action) : undefined));
    keyCache.set(cacheKey, keys);
  }
  return keys;
}

function addHook(state, key, handler) {
  if (!state.hooks[key]) state.hooks[key] = [];
  state.hooks[key].push(handler);
}

/** `on(name | names, handler)`. */
export function receiverOn(state, webhookNameOrNames, handler) {
  if (Array.isArray(webhookNameOrNames)) {
    for (const name of webhookNameOrNames) receiverOn(state, name, handler);
    return;
  }
  validateEventName(webhookNameOrNames, { onUnknownEventName: "warn", log: state.log });
  addHook(state, webhookNameOrNames, handler);
}

/** `onAny(handler)`. */
export function receiverOnAny(state, handler) {
  addHook(state, "*", handler);
}

/** `onError(handler)`. */
export function receiverOnError(state, handler) {
  addHook(state, "error", handler);
}

/** Removes the most recent registration of `handler`. */
export function removeListener(state, webhookNameOrNames, handler) {
  if (Array.isArray(webhookNameOrNames)) {
    for (const name of webhookNameOrNames) removeListener(state, name, handler);
    return;
  }
  const hooks = state.hooks[webhookNameOrNames];
  if (!hooks) return;
  const index = hooks.lastIndexOf(handler);
  if (index !== -1) hooks.splice(index, 1);
}

function logFatal(error) {
  console.log('FATAL: Error occurred in "error" event handler');
  console.log(error);
}

/** Runs an error handler; its own failures are logged, never thrown. */
export function wrapErrorHandler(handler, error) {
  let returned;
  try {
    returned = handler(error);
  } catch (thrown) {
    logFatal(thrown);
  }
  if (returned && returned.catch) returned.catch(logFatal);
}

function eventNameMissing() {
  const error = new Error("Event name not passed");
  return new AggregateError([error], error.message);
}

/** `receive(event)`: runs every matching handler in parallel. */
export function receiverHandle(state, event) {
  const errorHandlers = state.hooks.error || [];
  if (event instanceof Error) {
    const error = Object.assign(new AggregateError([event], event.message), { event });
    errorHandlers.forEach((handler) => wrapErrorHandler(handler, error));
    return Promise.reject(error);
  }
  if (!event || !event.name) throw eventNameMissing();
  if (!event.payload) throw eventNameMissing();

  const action = "action" in event.payload ? event.payload.action : null;
  const handlers = [];
  for (const key of listenerKeys(event.name, action)) {
    const hooks = state.hooks[key];
    if (hooks) for (const hook of hooks) handlers.push(hook);
  }
  if (handlers.length === 0) return Promise.resolve();

  const errors = [];
  const runs = handlers.map((handler) => {
    let promise = Promise.resolve(event);
    if (state.transform) promise = promise.then(state.transform);
    return promise.then((value) => handler(value)).catch((error) => errors.push(Object.assign(error, { event })));
  });
  return Promise.all(runs).then(() => {
    if (errors.length === 0) return;
    const error = new AggregateError(errors, errors.map((each) => each.message).join("\n"));
    Object.assign(error, { event });
    errorHandlers.forEach((handler) => wrapErrorHandler(handler, error));
    throw error;
  });
}

/** The standalone event handler (`on`, `onAny`, `onError`, `removeListener`, `receive`). */
export function createEventHandler(options) {
  const state = { hooks: {}, log: createLogger(options && options.log) };
  if (options && options.transform) state.transform = options.transform;
  return {
    on: (names, handler) => receiverOn(state, names, handler),
    onAny: (handler) => receiverOnAny(state, handler),
    onError: (handler) => receiverOnError(state, handler),
    removeListener: (names, handler) => removeListener(state, names, handler),
    receive: (event) => receiverHandle(state, event),
  };
}
