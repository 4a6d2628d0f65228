// Compiled by scripts/test.mjs against this package and against
// @octokit/webhooks-methods (import changed), so both accept the same code.
import { sign, verify, verifyWithFallback } from "@strata/webhooks-methods";

export async function check(body: string, header: string): Promise<boolean> {
  const signature: string = await sign("secret", body);
  const version: string = sign.VERSION + verify.VERSION;
  const ok: boolean = await verify("secret", body, header);
  const rotated = await verifyWithFallback("secret", body, header, ["old"]);
  return ok || Boolean(rotated) || signature.length + version.length === 0;
}
