/** `sha256=` and the lowercase hex HMAC-SHA256 of `payload` with `secret`. */
export declare function sign(secret: string, payload: string): Promise<string>;
export declare namespace sign {
  var VERSION: string;
}

/** Whether `signature` is `eventPayload`'s signature with `secret` (constant-time; false when malformed). */
export declare function verify(secret: string, eventPayload: string, signature: string): Promise<boolean>;
export declare namespace verify {
  var VERSION: string;
}

/** `verify` with `secret`, then with each of `additionalSecrets` in order (secret rotation). */
export declare function verifyWithFallback(
  secret: string,
  payload: string,
  signature: string,
  additionalSecrets: undefined | string[],
): Promise<any>;
