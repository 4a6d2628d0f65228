// @strata/webhooks for Node (the "node" export condition): the same package,
// with signatures hashed by Node's native HMAC (core still formats and checks
// the header value).
import { createHmac } from "node:crypto";

import { useNativeHmac } from "./signature.js";

useNativeHmac((secret, payload) => createHmac("sha256", secret).update(payload).digest());

export * from "./index.js";
