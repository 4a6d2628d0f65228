// The fleet page at 100,000 tenants (CONSOLE_PAGED_TENANTS), and the
// Versions page at as many versions, in headless Chromium, on the PostgreSQL with default settings of tests/servers.sh
// (STRATA_TEST_PG_DEFAULT_URL): the page reads its rows a page at a time,
// the fleet's counts beside them, and never the whole fleet — the first
// page drawn, a jump to the last row or the middle reads the page it shows
// and no other, a search is the service's. The service's peak memory
// through it is asserted; the times are printed (benchmark figures).
//
// The fixture costs seconds: one tenant's version runs through the service,
// then the tenant list grows to the whole fleet and every other tenant gets
// that tenant's records (a version over 100,000 tenants takes minutes in a
// debug build; scale.mjs runs real versions at 10,000). Tenants whose name
// ends in 77 miss the second file: 1 % of the fleet is behind.
//
// Usage: node tests/console/paged.mjs   (without STRATA_TEST_PG_DEFAULT_URL
// it says so and passes, unless CI is set)
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checker, cleanUp, freePort, freshPostgresDatabase, launchChromium, startStrata, watchedPage } from "./harness.mjs";

const TENANTS = Number(process.env.CONSOLE_PAGED_TENANTS || 100000);
const PAGE = 1000; // the console's FLEET_PAGE
// The release build serves from ~22 MiB; the bound is 64 MiB at
// 100,000 tenants: what the page may add to the service's resident memory
// (a debug build's own start is larger, its heap the same).
const GROWTH_BOUND_MIB = 40;
const { dataSource, psql, drop } = freshPostgresDatabase("strata_console_paged", "console in pages");
const name = (i) => `t${String(i).padStart(6, "0")}`;
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(2);
const { checks, ok } = checker();
const behind = Array.from({ length: TENANTS }, (_, i) => name(i + 1)).filter((n) => n.endsWith("77")).length;

let since = performance.now();
psql(`create table public.tenants (name text primary key, listed boolean not null);
  insert into public.tenants select 't' || lpad(i::text, 6, '0'), i = 1 from generate_series(1, ${TENANTS}) i;
  do $$ declare t text; begin for t in select name from public.tenants loop execute format('create schema %I', t); end loop; end $$;`);

const work = mkdtempSync(join(tmpdir(), "strata-console-paged-"));
const shots = process.env.STRATA_SCREENSHOTS || join(work, "screenshots");
mkdirSync(shots, { recursive: true });
mkdirSync(join(work, "migrations/tenants"), { recursive: true });
mkdirSync(join(work, "migrations/ref"), { recursive: true });
writeFileSync(join(work, "migrations/ref/001.sql"), "create schema {schema};\n");
writeFileSync(join(work, "migrations/tenants/001.sql"), "create table {schema}.items (id bigint generated always as identity primary key, name text not null);\n");
writeFileSync(join(work, "migrations/tenants/002.sql"), "alter table {schema}.items add column price integer;\n");
const port = await freePort();
const service = await startStrata(work, `baseLocation: ${join(work, "migrations")}
driver: postgres
dataSource: ${dataSource}
tenantSelectSQL: select name from public.tenants where listed order by name
singleMigrations: [ref]
tenantMigrations: [tenants]
port: ${port}
logLevel: ERROR
`, { port });
const { base, api, child } = service;
const status = (field) => Number(readFileSync(`/proc/${child.pid}/status`, "utf8").match(new RegExp(`${field}:\\s+(\\d+) kB`))[1]) / 1024;
// Resident memory now, and the peak counted from here on (writing 5 to
// clear_refs resets VmHWM to VmRSS).
const memoryFromHere = () => {
  writeFileSync(`/proc/${child.pid}/clear_refs`, "5");
  return status("VmRSS");
};
let browser;
try {
  const first = await api('mutation { createVersion(input: { versionName: "base" }) { summary { tenants tenantMigrationsTotal } } }');
  assert.deepEqual(first.createVersion.summary, { tenants: 1, tenantMigrationsTotal: 2 });
  psql(`update public.tenants set listed = true;
    insert into svc.svc_migrations (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id)
      select m.name, m.source_dir, m.filename, m.migration_type, t.name, m.created, m.contents, m.checksum, m.version_id
        from svc.svc_migrations m cross join public.tenants t
        where m.db_schema = '${name(1)}' and t.name <> '${name(1)}' and not (m.filename = 'tenants/002.sql' and t.name like '%77');
    analyze svc.svc_migrations;`);
  assert.equal(psql("select count(*) from svc.svc_migrations where migration_type = 2"), String(2 * TENANTS - behind));
  console.log(`fixture: ${TENANTS} tenants, ${2 * TENANTS - behind} tenant records, in ${seconds(since)} s`);
  const startMiB = memoryFromHere();

  browser = await launchChromium();
  const { page, problems } = await watchedPage(browser);
  // Every request of the page to the API, in the order it asked: what it
  // asked, and once answered its answer's size. Recorded as it is sent, so
  // a count never misses one whose answer is still being read (on a loaded
  // machine the page can draw an answer before the test has read its body);
  // `answered()` waits for every answer asked so far.
  const answers = [];
  page.on("request", (request) => {
    if (!request.url().endsWith("/v2/service")) return;
    const asked = JSON.parse(request.postData() ?? "{}");
    const answer = { query: asked.query ?? "", variables: asked.variables ?? {}, bytes: 0 };
    answer.read = request.response().then((response) => response?.body()).then((body) => {
      answer.bytes = body?.length ?? 0;
    });
    answers.push(answer);
  });
  const answered = () => Promise.all(answers.map((a) => a.read));
  const rowReads = () => answers.filter((a) => /tenants\(first/.test(a.query));

  since = performance.now();
  await page.goto(`${base}/console/#/fleet`);
  await page.locator("#fleet-count").waitFor({ timeout: 120000 });
  await page.locator(`.matrix-row[data-tenant="${name(1)}"]`).waitFor();
  const firstSeconds = seconds(since);
  await answered();
  assert.equal(await page.locator("#fleet-count").textContent(), `${TENANTS} of ${TENANTS} tenant(s) shown; ${behind} behind, 0 drifted; 2 tenant migration(s).`);
  const domRows = await page.locator(".matrix-row").count();
  assert.ok(domRows > 10 && domRows < 60, `${domRows} rows in the DOM for ${TENANTS} tenants`);
  assert.equal(rowReads().length, 1, "the first page came with the counts, in one request");
  const largest = Math.max(...answers.map((a) => a.bytes));
  assert.ok(largest < 200 * 1024, `an answer of ${largest} bytes: the page read more than a page of rows`);
  ok(`first page of ${TENANTS} tenants drawn in ${firstSeconds} s (one request, largest answer ${(largest / 1024).toFixed(0)} KB), ${domRows} rows in the DOM`);

  // A jump to the end reads the last page, not the 99 between.
  since = performance.now();
  await page.locator(".matrix-body").evaluate((body) => (body.scrollTop = body.scrollHeight));
  await page.locator(`.matrix-row[data-tenant="${name(TENANTS)}"]`).waitFor({ timeout: 60000 });
  const endSeconds = seconds(since);
  await answered();
  assert.deepEqual(await page.locator(`.matrix-row[data-tenant="${name(TENANTS)}"] .cell`).allTextContents(), ["✓", "✓"]);
  const lastPage = Math.floor((TENANTS - 1) / PAGE);
  assert.deepEqual(rowReads().slice(1).map((a) => a.variables.offset), [lastPage * PAGE], "the jump read the page it shows");
  // And to the middle: the page there, a tenant behind on it.
  since = performance.now();
  const middle = Math.floor(TENANTS / 2);
  await page.locator(".matrix-body").evaluate((body, top) => (body.scrollTop = top), (middle + 76) * 28);
  await page.locator(`.matrix-row[data-tenant="${name(middle + 77)}"]`).waitFor({ timeout: 60000 });
  const middleSeconds = seconds(since);
  assert.deepEqual(await page.locator(`.matrix-row[data-tenant="${name(middle + 77)}"] .cell`).allTextContents(), ["✓", "•"]);
  const pagesRead = rowReads().length;
  assert.ok(pagesRead <= 4, `${pagesRead} page reads for the first page, the end and the middle`);
  ok(`the last row in ${endSeconds} s and the middle in ${middleSeconds} s, ${pagesRead} pages read of ${Math.ceil(TENANTS / PAGE)}`);

  // A search is the service's: the matches counted, their first page shown.
  since = performance.now();
  await page.fill("#tenant-search", "T04247");
  await page.locator("#fleet-count", { hasText: `10 of ${TENANTS} tenant(s) shown; ${behind} behind` }).waitFor({ timeout: 60000 });
  await page.locator(`.matrix-row[data-tenant="${name(42477)}"]`).waitFor();
  const searchSeconds = seconds(since);
  await answered();
  assert.deepEqual(await page.locator(`.matrix-row[data-tenant="${name(42477)}"] .cell`).allTextContents(), ["✓", "•"]);
  const search = answers.at(-1);
  assert.equal(search.variables.name, "t04247", search.query);
  assert.ok(search.bytes < 20 * 1024, `the search answered ${search.bytes} bytes`);
  await page.screenshot({ path: join(shots, "paged-fleet.png") });
  ok(`a search over ${TENANTS} tenants by the service in ${searchSeconds} s: 10 matches counted and shown`);

  // The Versions page: the newest page of a version per tenant, older
  // ones a page at a time, never the whole list.
  psql(`insert into svc.svc_versions (name, created, request_id)
    select 'tenant ' || i, now(), 'r' || i from generate_series(1, ${TENANTS}) i;`);
  const versionCount = TENANTS + 1;
  since = performance.now();
  await page.goto(`${base}/console/#/versions`);
  await page.locator("#versions-count", { hasText: `100 of ${versionCount} version(s) shown` }).waitFor({ timeout: 60000 });
  const versionsSeconds = seconds(since);
  await answered();
  const versionRows = () => page.locator("tbody tr td:first-child").allTextContents();
  const firstHundred = (await versionRows()).map(Number);
  assert.equal(firstHundred[0], versionCount, "the newest first");
  assert.deepEqual(firstHundred, Array.from({ length: 100 }, (_, i) => versionCount - i));
  await page.click("#older-versions");
  await page.locator("#versions-count", { hasText: `200 of ${versionCount}` }).waitFor({ timeout: 60000 });
  await answered();
  assert.deepEqual((await versionRows()).map(Number).slice(99, 101), [versionCount - 99, versionCount - 100]);
  const versionReads = answers.filter((a) => /versions\(last/.test(a.query));
  assert.deepEqual(versionReads.map((a) => a.variables.before ?? null), [null, versionCount - 99]);
  assert.ok(Math.max(...versionReads.map((a) => a.bytes)) < 40 * 1024, "a page of versions, not the list");
  await page.screenshot({ path: join(shots, "paged-versions.png") });
  ok(`the Versions page of ${versionCount} versions drawn in ${versionsSeconds} s, the newest 100, then 100 older`);

  const peak = status("VmHWM");
  const growth = peak - startMiB;
  assert.ok(growth <= GROWTH_BOUND_MIB, `the service's peak RSS grew by ${growth.toFixed(1)} MiB (${startMiB.toFixed(1)} → ${peak.toFixed(1)}; bound ${GROWTH_BOUND_MIB})`);
  assert.deepEqual(problems, [], "console errors, CSP violations or failed requests");
  ok(`the service's peak RSS through the fleet and Versions pages at ${TENANTS} tenants: +${growth.toFixed(1)} MiB (${startMiB.toFixed(1)} → ${peak.toFixed(1)}; bound +${GROWTH_BOUND_MIB})`);
  console.log(`screenshots: ${shots}`);
  console.log(`console in pages: ${checks.length} checks passed`);
} finally {
  await cleanUp({ browser, service, drop });
}
