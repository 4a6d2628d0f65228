// Types of @strata/webhooks: the same names and shapes typed code written for
// @octokit/webhooks uses, with payloads from @octokit/openapi-webhooks-types.
import type {
  EmitterWebhookEvent,
  EmitterWebhookEventName,
  EmitterWebhookEventWithStringPayloadAndSignature,
  HandlerFunction,
  Logger,
  MiddlewareOptions,
  Options,
  RemoveHandlerFunction,
  WebhookError,
  WebhookEventHandlerError,
} from "./types.js";

export type * from "./types.js";
export { emitterEventNames } from "./generated.js";

/** Verifies, receives and dispatches GitHub webhook deliveries. */
export declare class Webhooks<TTransformed = unknown> {
  sign: (payload: string) => Promise<string>;
  verify: (eventPayload: string, signature: string) => Promise<boolean>;
  on: <E extends EmitterWebhookEventName>(event: E | E[], callback: HandlerFunction<E, TTransformed>) => void;
  onAny: (
    callback: (event: TTransformed extends unknown ? EmitterWebhookEvent : EmitterWebhookEvent & TTransformed) => any,
  ) => void;
  onError: (callback: (event: WebhookEventHandlerError<TTransformed>) => any) => void;
  removeListener: <E extends EmitterWebhookEventName | "*">(event: E | E[], callback: RemoveHandlerFunction<E, TTransformed>) => void;
  receive: (event: EmitterWebhookEvent) => Promise<void>;
  verifyAndReceive: (options: EmitterWebhookEventWithStringPayloadAndSignature) => Promise<void>;
  constructor(options: Options<TTransformed> & { secret: string });
}

/** The listener half of `Webhooks`, usable without a secret. */
export interface EventHandler<TTransformed = unknown> {
  on<E extends EmitterWebhookEventName>(event: E | E[], callback: HandlerFunction<E, TTransformed>): void;
  onAny(handler: (event: TTransformed extends unknown ? EmitterWebhookEvent : EmitterWebhookEvent & TTransformed) => any): void;
  onError(handler: (event: WebhookEventHandlerError<TTransformed>) => any): void;
  removeListener<E extends EmitterWebhookEventName>(event: E | E[], callback: HandlerFunction<E, TTransformed>): void;
  receive(event: EmitterWebhookEvent | WebhookError): Promise<void>;
}

export declare function createEventHandler<TTransformed = unknown>(options: Options<TTransformed>): EventHandler<TTransformed>;

type ValidateEventNameOptions =
  | { onUnknownEventName?: undefined | "throw" }
  | { onUnknownEventName: "ignore" }
  | { onUnknownEventName: "warn"; log?: Pick<Logger, "warn"> };

/** Throws for `*`, `error` and, unless told to warn or ignore, unknown names. */
export declare function validateEventName<TOptions extends ValidateEventNameOptions = ValidateEventNameOptions>(
  eventName: EmitterWebhookEventName | (string & Record<never, never>),
  options?: TOptions,
): asserts eventName is TOptions extends { onUnknownEventName: "throw" } ? EmitterWebhookEventName : Exclude<string, "*" | "error">;

/** A handler for `node:http` and Express-style servers; resolves `false` for other paths. */
export declare function createNodeMiddleware(
  webhooks: Webhooks<any>,
  options?: MiddlewareOptions,
): (request: any, response?: any, next?: Function) => Promise<boolean>;

/** A `(Request) => Promise<Response>` handler for web-standard runtimes. */
export declare function createWebMiddleware(webhooks: Webhooks<any>, options?: MiddlewareOptions): (request: Request) => Promise<Response>;

/** Reads relayed deliveries (webhook-proxy channel) with EventSource and hands them to `verifyAndReceive`. */
export declare function createRelayClient(
  webhooks: Pick<Webhooks<any>, "verifyAndReceive">,
  options: { url: string; EventSource?: new (url: string) => any; log?: Pick<Logger, "warn" | "error"> },
): { close(): void; ready: Promise<void> };

export declare const VERSION: string;
