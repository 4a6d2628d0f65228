// The fleet matrix and the rollout view at fleet scale, in headless
// Chromium: 10,000 tenants (CONSOLE_SCALE_TENANTS) on a PostgreSQL with
// default settings (STRATA_TEST_PG_DEFAULT_URL, from tests/servers.sh).
// The tenants come from a table (`tenantSelectSQL` returns a `tier`
// column) and their schemas are created in bulk, so the fixture costs
// seconds; one version brings every tenant to the first two migrations.
// Then a rollout of a third migration, which fails in one tenant, in
// three waves (tier=internal, then 10 %, each awaiting approval, then the
// rest): the page shows each wave's state and what it did, live; the
// matrix counts, searches and scrolls 10,000 rows with a bounded DOM; the
// failing tenant is quarantined within the budget and shown with its
// error. Times of the page's reads and renders are printed (a benchmark
// figure, not asserted).
//
// Usage: node tests/console/scale.mjs   (needs the servers of tests/servers.sh;
// without STRATA_TEST_PG_DEFAULT_URL it says so and passes, unless CI is set)
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checker, cleanUp, freePort, freshPostgresDatabase, launchChromium, startStrata, watchedPage } from "./harness.mjs";

const TENANTS = Number(process.env.CONSOLE_SCALE_TENANTS || 10000);
const { dataSource, psql, drop } = freshPostgresDatabase("strata_console_scale", "console at scale");
const name = (i) => `t${String(i).padStart(5, "0")}`;
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(2);
const { checks, ok } = checker();

// The fixture: the tenant list with a tier (the first 10 are internal),
// and every tenant's schema.
let since = performance.now();
psql(`create table public.tenants (name text primary key, tier text not null);
  insert into public.tenants select 't' || lpad(i::text, 5, '0'), case when i <= 10 then 'internal' else 'customer' end
    from generate_series(1, ${TENANTS}) i;
  do $$ declare t text; begin for t in select name from public.tenants loop execute format('create schema %I', t); end loop; end $$;`);
console.log(`fixture: ${TENANTS} tenants listed and their schemas created in ${seconds(since)} s`);

const work = mkdtempSync(join(tmpdir(), "strata-console-scale-"));
const shots = process.env.STRATA_SCREENSHOTS || join(work, "screenshots");
mkdirSync(join(work, "migrations/tenants"), { recursive: true });
mkdirSync(join(work, "migrations/ref"), { recursive: true });
writeFileSync(join(work, "migrations/ref/001.sql"), "create schema {schema};\n");
mkdirSync(shots, { recursive: true });
writeFileSync(join(work, "migrations/tenants/001.sql"), "create table {schema}.items (id bigint generated always as identity primary key, name text not null);\n");
writeFileSync(join(work, "migrations/tenants/002.sql"), "alter table {schema}.items add column price integer;\n");
const port = await freePort();
const service = await startStrata(work, `baseLocation: ${join(work, "migrations")}
driver: postgres
dataSource: ${dataSource}
tenantSelectSQL: select name, tier from public.tenants order by name
singleMigrations: [ref]
tenantMigrations: [tenants]
port: ${port}
logLevel: ERROR
failureBudget: 5
`, { port });
const { base, api } = service;
let browser;
try {
  since = performance.now();
  const first = await api('mutation { createVersion(input: { versionName: "base" }) { summary { tenants tenantMigrationsTotal } } }');
  assert.deepEqual(first.createVersion.summary, { tenants: TENANTS, tenantMigrationsTotal: 2 * TENANTS });
  console.log(`base version: ${2 * TENANTS} migrations in ${TENANTS} tenants in ${seconds(since)} s (debug build)`);

  browser = await launchChromium();
  const { page, problems } = await watchedPage(browser);

  // The matrix: every tenant, applied; a bounded DOM; search; the last row.
  since = performance.now();
  await page.goto(`${base}/console/#/fleet`);
  await page.locator("#fleet-count").waitFor({ timeout: 60000 });
  const matrixSeconds = seconds(since);
  assert.equal(await page.locator("#fleet-count").textContent(), `${TENANTS} of ${TENANTS} tenant(s) shown; 0 behind, 0 drifted; 2 tenant migration(s).`);
  const domRows = await page.locator(".matrix-row").count();
  assert.ok(domRows > 10 && domRows < 60, `${domRows} rows in the DOM for ${TENANTS} tenants`);
  since = performance.now();
  await page.locator(".matrix-body").evaluate((body) => (body.scrollTop = body.scrollHeight));
  await page.locator(`.matrix-row[data-tenant="${name(TENANTS)}"]`).waitFor();
  const scrollSeconds = seconds(since);
  assert.ok((await page.locator(".matrix-row").count()) < 60, "the DOM stays bounded at the end of the list");
  since = performance.now();
  await page.fill("#tenant-search", name(4242));
  await page.locator("#fleet-count", { hasText: `1 of ${TENANTS} tenant(s) shown` }).waitFor();
  const searchSeconds = seconds(since);
  assert.deepEqual(await page.locator(`.matrix-row[data-tenant="${name(4242)}"] .cell`).allTextContents(), ["✓", "✓"]);
  await page.fill("#tenant-search", "");
  await page.screenshot({ path: join(shots, "scale-fleet.png") });
  ok(`fleet matrix at ${TENANTS} tenants: shown in ${matrixSeconds} s, ${domRows} rows in the DOM, last row in ${scrollSeconds} s, a search in ${searchSeconds} s`);

  // The rollout: a migration one tenant refuses (a check on its own name).
  const refusing = name(TENANTS - 1);
  writeFileSync(join(work, "migrations/tenants/003.sql"),
    `create table {schema}.notes (id integer primary key, owner text check (owner <> '${refusing}'));\ninsert into {schema}.notes values (1, '{schema}');\n`);
  const started = await api('mutation { startRollout(versionName: "notes", waves: ["tier=internal:approve", "10%:approve", "rest"]) { id } }');
  const id = started.startRollout.id;
  await page.goto(`${base}/console/#/rollouts`);
  const card = page.locator(`.rollout[data-rollout="${id}"]`);
  const waitFor = async (status, timeout = 120000) => {
    since = performance.now();
    await card.locator(`[data-status="${status}"]`).waitFor({ timeout }).catch(async (e) => {
      throw new Error(`${e.message}\n${JSON.stringify(await api("{ rollouts { status events { action detail } } }"))}`);
    });
    return seconds(since);
  };
  await waitFor("AWAITING_APPROVAL");
  const waves = () => card.locator("li.wave").allTextContents();
  let shown = await waves();
  assert.match(shown[0], /^tier=internal:approve — done: version \d+: 10 migration\(s\), 0 script\(s\) in 10 tenant\(s\)$/);
  assert.deepEqual(shown.slice(1), ["10%:approve — next", "rest — pending"]);
  await page.goto(`${base}/console/#/fleet`);
  await page.locator("#fleet-count", { hasText: `${TENANTS - 10} behind` }).waitFor({ timeout: 60000 });
  await page.goto(`${base}/console/#/rollouts`);
  await card.locator(`button[aria-label="Approve rollout ${id}"]`).click();
  await page.locator("#confirm[open]").waitFor();
  await page.locator("#confirm-ok").click();
  await card.locator("li.wave", { hasText: "10%:approve — done" }).waitFor({ timeout: 120000 });
  await waitFor("AWAITING_APPROVAL");
  shown = await waves();
  const share = Number(shown[1].match(/in (\d+) tenant\(s\)/)?.[1]);
  assert.ok(share > 0.08 * TENANTS && share < 0.12 * TENANTS, `the 10% wave ran in ${share} tenants: ${shown[1]}`);
  await page.screenshot({ path: join(shots, "scale-rollout-awaiting.png"), fullPage: true });
  await card.locator(`button[aria-label="Approve rollout ${id}"]`).click();
  await page.locator("#confirm[open]").waitFor();
  await page.locator("#confirm-ok").click();
  const restSeconds = await waitFor("COMPLETED", 300000);
  shown = await waves();
  // Each tenant ran the file once in the wave that selected it first (a
  // share may select tenants of the first wave: they have nothing left);
  // the one that refused it is quarantined by the wave that met it.
  const ran = shown.map((text) => Number(text.match(/: (\d+) migration\(s\)/)?.[1]));
  assert.equal(ran[0] + ran[1] + ran[2] + 1, TENANTS, `${shown}`);
  // "rest" covers the whole list: those of earlier waves have nothing left.
  const rest = Number(shown[2].match(/in (\d+) tenant\(s\)/)?.[1]);
  assert.equal(rest, TENANTS, shown[2]);
  assert.ok(shown.some((text) => text.endsWith(`; quarantined: ${refusing}`)), `${shown}`);
  await page.screenshot({ path: join(shots, "scale-rollout-completed.png"), fullPage: true });
  ok(`rollout at ${TENANTS} tenants: tier=internal (10 tenants), 10% (${ran[1]} ran the file), rest (${ran[2]}); each wave's result on the page, live (the rest shown completed ${restSeconds} s after the approval)`);

  // The matrix after it: one tenant behind, quarantined, with its error.
  await page.goto(`${base}/console/#/fleet`);
  await page.locator("#fleet-count", { hasText: "; 1 behind, 0 drifted; 3 tenant migration(s); 1 quarantined." }).waitFor({ timeout: 60000 });
  assert.match(await page.locator(`#quarantine li[data-tenant="${refusing}"]`).textContent(), new RegExp(`^${refusing} tenants/003\\.sql:2:1 STATEMENT, 1 failure\\(s\\): .*notes_owner_check`));
  await page.fill("#tenant-search", refusing);
  await page.locator(`.matrix-row.quarantined[data-tenant="${refusing}"]`).waitFor();
  assert.deepEqual(await page.locator(`.matrix-row.quarantined[data-tenant="${refusing}"] .cell`).allTextContents(), ["✓", "✓", "•"]);
  const recorded = psql("select count(*), count(distinct db_schema) from svc.svc_migrations where filename = 'tenants/003.sql'");
  assert.equal(recorded, `${TENANTS - 1}|${TENANTS - 1}`, "every tenant but the refusing one recorded the rollout's file once");
  ok(`after the rollout: ${TENANTS - 1} tenants recorded the file once, ${refusing} is quarantined and shown with its error`);

  assert.deepEqual(problems, [], "console errors, CSP violations or failed requests");
  console.log(`screenshots: ${shots}`);
  console.log(`console at scale: ${checks.length} checks passed`);
} finally {
  await cleanUp({ browser, service, drop });
}
