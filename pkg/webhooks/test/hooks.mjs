// Preloaded by the test runner (node --import): lets the package's
// WebAssembly loader register its test hook (see pkg/shared/loader.js).
globalThis[Symbol.for("strata.testHooks")] = [];
