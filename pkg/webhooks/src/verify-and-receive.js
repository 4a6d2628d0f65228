import { verifyWithFallback } from "./signature.js";

/** Verifies a delivery's signature, parses its JSON and dispatches it. */
export async function verifyAndReceive(state, event) {
  const matches = await verifyWithFallback(state.secret, event.payload, event.signature, state.additionalSecrets).catch(() => false);
  if (!matches) {
    const error = new Error("[@strata/webhooks] signature does not match event payload and secret");
    error.event = event;
    error.status = 400;
    return state.eventHandler.receive(error);
  }
  let payload;
  try {
    payload = JSON.parse(event.payload);
  } catch (error) {
    error.message = "Invalid JSON";
    error.status = 400;
    throw new AggregateError([error], error.message);
  }
  return state.eventHandler.receive({ id: event.id, name: event.name, payload });
}
