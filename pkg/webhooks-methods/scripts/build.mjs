// npm run build: see ../../shared/build.mjs.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { buildPackage } from "../../shared/build.mjs";

await buildPackage({ pkgDir: join(dirname(fileURLToPath(import.meta.url)), ".."), features: ["webhooks"], entries: ["index.js", "node.js"] });
