// @strata/webhooks for Node (the "node" export condition): the same package,
// with signatures hashed, hex-encoded and compared by node:crypto (the
// header's form is core's; ../../shared/methods.js).
import { nodeCryptoPlatform } from "../../shared/node-crypto.js";
import { useNodeCrypto } from "./signature.js";

useNodeCrypto(nodeCryptoPlatform);

export * from "./index.js";
