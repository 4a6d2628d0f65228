// Latency of one small request (`{ identity { actor } }`) to a running
// `strata`, sequential, after a warm-up: p50 and p99 in milliseconds.
// usage: node auth_latency.mjs LABEL URL [BEARER]   (N=2000)
const [label, url, bearer] = process.argv.slice(2);
const n = Number(process.env.N || 2000);
const headers = { "content-type": "application/json", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) };
const body = JSON.stringify({ query: "{ identity { actor } }" });
const once = async () => {
  const response = await fetch(url, { method: "POST", headers, body });
  const answer = await response.json();
  if (!answer.data) throw new Error(`${label}: ${JSON.stringify(answer)}`);
};
for (let i = 0; i < 100; i++) await once();
const times = [];
for (let i = 0; i < n; i++) {
  const start = process.hrtime.bigint();
  await once();
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
times.sort((a, b) => a - b);
const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(3);
console.log(`${label}: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms (${n} requests)`);
