import type { EndpointInterface } from "@octokit/types";

/** Turns a GitHub REST API route and parameters into request options. */
export declare const endpoint: EndpointInterface<object>;

/** This package's version (also in the default `user-agent`). */
export declare const VERSION: string;

/** Whether `value` is merged deeply by `endpoint.merge` and `endpoint.defaults`. */
export declare function isPlainObject(value: unknown): value is object;
