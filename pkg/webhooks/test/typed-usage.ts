// Compiled by scripts/test.mjs against this package and against
// @octokit/webhooks (import changed), so both accept the same typed code.
import { Webhooks, createNodeMiddleware, createWebMiddleware, emitterEventNames, type EmitterWebhookEvent } from "@strata/webhooks";
import { createServer } from "node:http";

const webhooks = new Webhooks({ secret: "secret", additionalSecrets: ["old"] });
webhooks.on("issues.opened", ({ id, payload }) => {
  const number: number = payload.issue.number;
  const action: "opened" = payload.action;
  return `${id} ${number} ${action}`;
});
webhooks.on(["push", "pull_request.closed"], (event) => event.name);
webhooks.onAny((event: EmitterWebhookEvent) => event.id);
webhooks.onError((error) => error.event.name + error.errors.length);
// @ts-expect-error: not an event name
webhooks.on("not_an_event", () => {});
createServer(createNodeMiddleware(webhooks, { path: "/hooks" })).listen(0);
const web: (request: Request) => Promise<Response> = createWebMiddleware(webhooks);
const names: readonly string[] = emitterEventNames;
export { web, names };
