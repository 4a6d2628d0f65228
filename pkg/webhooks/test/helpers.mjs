// Real HTTP servers on 127.0.0.1 for the middleware tests.
import { createServer } from "node:http";

/** Serves `handler` (a Node middleware) and returns `{ url, close }`. */
export async function serveNode(middleware, fallback) {
  const server = createServer(async (request, response) => {
    const handled = await middleware(request, response);
    if (!handled) {
      if (fallback) fallback(request, response);
      else response.writeHead(404).end("not ours");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** Serves a web middleware `(Request) => Response` over node:http. */
export async function serveWeb(middleware) {
  const server = createServer(async (request, response) => {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    const webRequest = new Request(`http://127.0.0.1${request.url}`, {
      method: request.method,
      headers,
      body: ["GET", "HEAD"].includes(request.method) ? undefined : body,
    });
    const answer = await middleware(webRequest);
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

/** POSTs a delivery. */
export function deliver(url, { event, id = "00000000-0000-0000-0000-000000000001", signature, body, headers = {} }) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": id,
      "x-hub-signature-256": signature,
      ...headers,
    },
    body,
  });
}
