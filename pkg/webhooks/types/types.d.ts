// The named types of @octokit/webhooks' public `types` entry, over the
// payload types of @octokit/openapi-webhooks-types.
import type { RequestError } from "@octokit/request-error";
import type { webhooks as OpenAPIWebhooks } from "@octokit/openapi-webhooks-types";
import type { EventPayloadMap, emitterEventNames } from "./generated.js";

export type { EventPayloadMap } from "./generated.js";

export type WebhookEventName = keyof EventPayloadMap;
export type ExtractEvents<TEventName> = TEventName extends `${infer _TWebhookEvent}.${infer _TAction}` ? never : TEventName;
export type WebhookEvents = ExtractEvents<EmitterWebhookEventName>;
export type WebhookEventDefinition<TEventName extends keyof OpenAPIWebhooks> =
  OpenAPIWebhooks[TEventName]["post"]["requestBody"]["content"]["application/json"];

export type EmitterWebhookEventName = (typeof emitterEventNames)[number];
export type EmitterWebhookEvent<TEmitterEvent extends EmitterWebhookEventName = EmitterWebhookEventName> =
  TEmitterEvent extends `${infer TWebhookEvent}.${infer TAction}`
    ? BaseWebhookEvent<Extract<TWebhookEvent, WebhookEventName>> & { payload: { action: TAction } }
    : BaseWebhookEvent<Extract<TEmitterEvent, WebhookEventName>>;

export type EmitterWebhookEventWithStringPayloadAndSignature = {
  id: string;
  name: string;
  payload: string;
  signature: string;
};

interface BaseWebhookEvent<TName extends WebhookEventName> {
  id: string;
  name: TName;
  payload: EventPayloadMap[TName];
}

export interface Logger {
  debug: (...data: any[]) => void;
  info: (...data: any[]) => void;
  warn: (...data: any[]) => void;
  error: (...data: any[]) => void;
}

export interface Options<TTransformed = unknown> {
  secret?: string;
  additionalSecrets?: string[] | undefined;
  transform?: TransformMethod<TTransformed>;
  log?: Partial<Logger>;
}

type TransformMethod<T> = (event: EmitterWebhookEvent) => T | PromiseLike<T>;

export type HandlerFunction<TName extends EmitterWebhookEventName, TTransformed = unknown> = (
  event: EmitterWebhookEvent<TName> & TTransformed,
) => any;

export type RemoveHandlerFunction<TName extends EmitterWebhookEventName | "*", TTransformed = unknown> = (
  event: EmitterWebhookEvent<Exclude<TName, "*">> & TTransformed,
) => any;

export type MiddlewareOptions = {
  timeout?: number;
  path?: string;
  log?: Logger;
  /** Bodies larger than this are refused with 413 before hashing (default 25 MiB). */
  maxPayloadBytes?: number;
};

type Hooks = { [key: string]: Function[] };

export interface State extends Options<any> {
  eventHandler?: any;
  hooks: Hooks;
  log: Logger;
}

/** An error with the optional properties of `octokit.request` errors. */
export type WebhookError = Error &
  Partial<RequestError> & {
    event?: EmitterWebhookEventWithStringPayloadAndSignature | undefined;
  };

export interface AggregateWebhookError extends AggregateError {
  errors: WebhookError[];
}

export interface WebhookEventHandlerError<TTransformed = unknown> extends AggregateWebhookError {
  event: TTransformed extends unknown ? EmitterWebhookEvent : EmitterWebhookEvent & TTransformed;
}
