// The desired-state page in headless Chromium, on the PostgreSQL with
// default settings of tests/servers.sh (STRATA_TEST_PG_DEFAULT_URL): six
// tenants as migrated, then changed by hand — two lose an index, one gains
// a column — against a configured desired schema that adds a column. The
// page shows the three plans, largest first, the one that loses data
// marked; "Roll out" starts a rollout of one wave per plan (the plan that
// loses data left out), which the Rollouts page shows by plan; its first
// wave brings exactly its three tenants to the desired schema and waits
// for an approval.
//
// Usage: node tests/console/desired.mjs   (without STRATA_TEST_PG_DEFAULT_URL
// it says so and passes, unless CI is set)
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checker, cleanUp, freePort, freshPostgresDatabase, launchChromium, startStrata, watchedPage } from "./harness.mjs";

const { dataSource, psql, drop } = freshPostgresDatabase("strata_console_desired", "console desired state");
const { checks, ok } = checker();
const name = (i) => `t${i}`;

psql(`create table public.tenants (name text primary key);
  insert into public.tenants select 't' || i from generate_series(1, 6) i;
  do $$ declare t text; begin for t in select name from public.tenants loop execute format('create schema %I', t); end loop; end $$;`);
const work = mkdtempSync(join(tmpdir(), "strata-console-desired-"));
const shots = process.env.STRATA_SCREENSHOTS || join(work, "screenshots");
mkdirSync(shots, { recursive: true });
for (const dir of ["ref", "tenants", "schema"]) mkdirSync(join(work, "migrations", dir), { recursive: true });
writeFileSync(join(work, "migrations/ref/001.sql"), "create schema {schema};\n");
const items = "create table {schema}.items (id integer primary key, name text not null);\ncreate index items_name on {schema}.items (name);\n";
writeFileSync(join(work, "migrations/tenants/001.sql"), items);
writeFileSync(join(work, "migrations/schema/tenants.sql"), `${items}alter table {schema}.items add column price integer;\n`);
const port = await freePort();
const service = await startStrata(work, `baseLocation: ${join(work, "migrations")}
driver: postgres
dataSource: ${dataSource}
tenantSelectSQL: select name from public.tenants order by name
singleMigrations: [ref]
tenantMigrations: [tenants]
desiredSchema: schema/tenants.sql
port: ${port}
logLevel: ERROR
`, { port });
const { base, api } = service;
const columns = (tenant) => psql(`select string_agg(column_name, ',' order by column_name) from information_schema.columns where table_schema = '${tenant}' and table_name = 'items'`);
let browser;
try {
  const first = await api('mutation { createVersion(input: { versionName: "base" }) { summary { tenants tenantMigrationsTotal } } }');
  assert.deepEqual(first.createVersion.summary, { tenants: 6, tenantMigrationsTotal: 6 });
  psql("drop index t4.items_name; drop index t5.items_name; alter table t6.items add column legacy text;");

  browser = await launchChromium();
  const { page, problems } = await watchedPage(browser);
  await page.goto(`${base}/console/#/desired`);
  await page.locator("#desired-count").waitFor({ timeout: 60000 });
  assert.equal(await page.locator("#desired-count").textContent(), "6 of 6 tenant(s) differ from the desired schema; 3 plan(s).");
  const groups = page.locator(".desired-group");
  assert.equal(await groups.count(), 3);
  assert.deepEqual(await groups.locator("p.mono").allTextContents(), ["t1, t2, t3", "t4, t5", "t6"]);
  assert.deepEqual(await groups.locator("[data-destructive]").count(), 1);
  assert.equal(await groups.nth(2).locator("[data-destructive]").count(), 1, "the plan that drops t6's column loses data");
  assert.match(await groups.nth(1).locator(".steps").textContent(), /CREATE INDEX items_name ON \{schema\}\.items/);
  await page.screenshot({ path: join(shots, "desired.png"), fullPage: true });
  ok("the desired-state page shows three plans, largest first, the one that loses data marked");

  await page.locator("#desired-rollout").click();
  await page.locator("#confirm[open]").waitFor();
  assert.match(await page.locator("#confirm-text").textContent(), /3 plan\(s\), one wave each.*The 1 plan\(s\) that lose data are left out\./);
  await page.locator("#confirm-ok").click();
  await page.waitForURL(/#\/rollouts$/);
  const card = page.locator(".rollout").first();
  await card.locator('[data-status="AWAITING_APPROVAL"]').waitFor({ timeout: 120000 });
  const waves = (await card.locator(".waves li").allTextContents()).map((text) => text.replace(/plan [0-9a-f]{12}/, "plan P").replace(/:.*$/, ""));
  assert.deepEqual(waves, ["plan P (3 tenant(s)) — done", "plan P (2 tenant(s)) — next"]);
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((i) => columns(name(i))), ["id,name,price", "id,name,price", "id,name,price", "id,name", "id,name", "id,legacy,name"]);
  const stored = await api("{ rollouts { desiredSchema waves { plan } } }");
  assert.equal(stored.rollouts[0].desiredSchema, "schema/tenants.sql");
  assert.ok(stored.rollouts[0].waves.every((w) => /^[0-9a-f]{64}$/.test(w.plan)), JSON.stringify(stored));
  await page.screenshot({ path: join(shots, "desired-rollout.png"), fullPage: true });
  ok("Roll out starts one wave per plan (the one that loses data left out); the first brings exactly its three tenants there and awaits approval");
  assert.deepEqual(problems, [], "console errors, CSP violations or failed requests");
  console.log(`screenshots: ${shots}`);
  console.log(`console desired state: ${checks.length} checks passed`);
} finally {
  await cleanUp({ browser, service, drop });
}
