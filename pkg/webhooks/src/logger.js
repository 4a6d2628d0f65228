/** A logger with every level: debug and info are silent unless given. */
export function createLogger(logger = {}) {
  if (typeof logger.debug !== "function") logger.debug = () => {};
  if (typeof logger.info !== "function") logger.info = () => {};
  if (typeof logger.warn !== "function") logger.warn = console.warn.bind(console);
  if (typeof logger.error !== "function") logger.error = console.error.bind(console);
  return logger;
}
