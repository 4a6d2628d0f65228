// npm run build: see ../../shared/build.mjs. The event names are generated
// (scripts/generate.mjs) into both src/event-names.js and strata_core; the
// build stops when the compiled core's list is not the JavaScript one.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { buildPackage } from "../../shared/build.mjs";
import { readList } from "../../shared/wire.js";
import { EVENT_NAMES } from "../src/event-names.js";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
await buildPackage({
  pkgDir,
  features: ["webhooks"],
  entries: ["index.js", "node.js", "internals.js"],
  beforeBundle: async (buildDir) => {
    const glue = await import(pathToFileURL(join(buildDir, "strata_wasm.js")).href);
    glue.initSync({ module: readFileSync(join(buildDir, "strata_wasm_bg.wasm")) });
    const names = readList(glue.webhooks_event_names());
    if (JSON.stringify(names) !== JSON.stringify(EVENT_NAMES)) {
      throw new Error("strata_core's EMITTER_EVENT_NAMES differs from src/event-names.js: run npm run generate");
    }
  },
});

