// The one retry rule (core/src/retry.rs), for the JavaScript receiver, which
// runs no wasm of its own for it. Tested against the same table of cases as
// core: tests/data/retry/cases.json (worker/js/retry.test.mjs).

/** The wait before the second attempt; each later one doubles it. */
export const FIRST_RETRY_DELAY_MS = 250;
const MAX_DOUBLINGS = 16;

/**
 * What to do after attempt `number` (from 1) of at most `maxAttempts`:
 * "delivered", "give up", or the wait in milliseconds before the next one.
 * `status` is the HTTP status, or 0 when there was no answer.
 */
export function nextStep(status, number, maxAttempts) {
  if (status >= 200 && status <= 299) return "delivered";
  const transient = status === 0 || status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599);
  if (!transient || number >= maxAttempts) return "give up";
  return FIRST_RETRY_DELAY_MS * 2 ** Math.min(number - 1, MAX_DOUBLINGS);
}
