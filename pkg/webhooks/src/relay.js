// Local development: deliveries relayed through a webhook-proxy channel
// (smee.io-style) and read with the standard EventSource. Each message's data
// is JSON with the delivery headers and body; they are verified and
// dispatched through `webhooks.verifyAndReceive` like a direct delivery.

/**
 * Starts reading `url`; returns `{ close(), ready }` where `ready` resolves
 * once the stream is open. Pass `EventSource` where the runtime has none
 * (Node before 22: the `eventsource` npm package).
 */
export function createRelayClient(webhooks, { url, EventSource: EventSourceClass = globalThis.EventSource, log = console } = {}) {
  if (!url) throw new TypeError("[@strata/webhooks] createRelayClient: options.url required");
  if (typeof EventSourceClass !== "function") {
    throw new TypeError("[@strata/webhooks] createRelayClient: this runtime has no EventSource; pass options.EventSource");
  }
  const source = new EventSourceClass(url);
  const ready = new Promise((resolve, reject) => {
    source.addEventListener("open", () => resolve(), { once: true });
    source.addEventListener("error", (event) => {
      if (source.readyState === 2) reject(new Error(`[@strata/webhooks] relay ${url} closed: ${event.message || "error"}`));
    });
  });
  ready.catch(() => {});
  source.addEventListener("message", (message) => {
    let relayed;
    try {
      relayed = JSON.parse(message.data);
    } catch {
      log.warn(`[@strata/webhooks] relay message is not JSON: ${String(message.data).slice(0, 80)}`);
      return;
    }
    if (!relayed || typeof relayed !== "object" || relayed.body === undefined) return;
    const payload = typeof relayed.body === "string" ? relayed.body : JSON.stringify(relayed.body);
    webhooks
      .verifyAndReceive({
        id: relayed["x-request-id"] || relayed["x-github-delivery"],
        name: relayed["x-github-event"],
        signature: relayed["x-hub-signature-256"],
        payload,
      })
      .catch((error) => log.error(error));
  });
  return { close: () => source.close(), ready };
}
