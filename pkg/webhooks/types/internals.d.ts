// @strata/webhooks/internals: building blocks with @octokit/webhooks' module
// names and signatures (not covered by semver).
import type { EmitterWebhookEvent, Logger, State, WebhookError } from "./types.js";
export { createEventHandler, validateEventName } from "./index.js";

export declare function receiverOn(state: State, webhookNameOrNames: string | string[], handler: Function): void;
export declare function receiverOnAny(state: State, handler: Function): void;
export declare function receiverOnError(state: State, handler: Function): void;
export declare function receiverHandle(state: State, event: EmitterWebhookEvent | WebhookError): Promise<void>;
export declare function removeListener(state: State, webhookNameOrNames: string | string[], handler: Function): void;
export declare function wrapErrorHandler(handler: Function, error: Error): void;
export declare function createLogger(logger?: Partial<Logger>): Logger;
export declare function concatUint8Array(data: Uint8Array[]): Uint8Array;
export declare function getPayload(request: any, maxBytes?: number): Promise<string>;
export declare function getPayloadFromRequestStream(request: any, maxBytes?: number): Promise<Uint8Array>;
export declare function normalizeTrailingSlashes(path: string): string;
export declare function verifyAndReceive(state: any, event: any): Promise<void>;
