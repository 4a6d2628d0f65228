// The Strata console: a single page over the service's own API
// (POST ../v2/service, GET ../health, GET ../v2/config), served by the
// binary at <pathPrefix>/console/ with every asset embedded. No framework,
// no CDN; every value from the server reaches the page as text (never HTML).

const API = new URL("../v2/service", document.baseURI);
const HEALTH = new URL("../health", document.baseURI);
const CONFIG = new URL("../v2/config", document.baseURI);
const ROW_HEIGHT = 28;

/** Builds an element: attributes (`on*` functions become listeners), then children. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces `node`'s children with those given, leaving out the absent
 * ones (`null`, `undefined`, `false`: what `cond ? el(…) : null` gives),
 * which `replaceChildren` would show as text ("null"). */
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((child) => child !== undefined && child !== null && child !== false));
  return node;
}

class ApiError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.extensions?.code ?? error.code;
  }
}

// Who uses the console. With authentication configured (/health says so) a
// person pastes an API token once per browser session; it is kept in
// sessionStorage and sent as `Authorization: Bearer` (no cookie, so no other
// site can make the browser send it). The buttons a person's roles do not
// allow are not shown — and the server refuses them anyway.
const TOKEN_KEY = "strata-token";
let me = { actor: "anonymous", roles: ["admin"] };
let authConfigured = false;

/** Thrown instead of sending a request once the person signed out: what a
 * page still had to load is dropped, never sent without a token (a 401). */
class SignedOut extends Error {}

function signedOut() {
  return authConfigured && !sessionStorage.getItem(TOKEN_KEY);
}

function authorization() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token && authConfigured) throw new SignedOut("signed out");
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** Whether the person may: "read", "deploy", "approve" or "admin". */
function can(permission) {
  const roles = me.roles;
  return roles.includes("admin") || permission === "read" ||
    (permission === "deploy" && roles.includes("deployer")) || (permission === "approve" && roles.includes("approver"));
}

async function gql(query, variables = {}) {
  const response = await fetch(API, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...authorization() },
    body: JSON.stringify({ query, variables }),
  });
  const answer = await response.json();
  if (answer.error) throw new ApiError(answer.error);
  if (answer.errors?.length) throw new ApiError(answer.errors[0]);
  return answer.data;
}

const main = () => document.getElementById("main");

function say(text) {
  const status = document.getElementById("status");
  status.textContent = text;
  clearTimeout(say.timer);
  say.timer = setTimeout(() => (status.textContent = ""), 6000);
}

function show(title, ...content) {
  // A page that finished loading after a sign-out does not cover the sign-in form.
  if (signedOut() && title !== "Sign in") return;
  const root = main();
  fill(root, el("h1", {}, title), ...content);
  document.title = `${title} · Strata console`;
}

function failure(error) {
  return el("p", { class: "error", role: "alert" }, error.code ? `${error.code}: ${error.message}` : String(error.message || error));
}

function table(headings, rows) {
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, headings.map(([text, numeric]) => el("th", { scope: "col", class: numeric ? "num" : null }, text)))),
    el("tbody", {}, rows),
  );
}

// ---- Overview ------------------------------------------------------------

async function overview() {
  const [health, config, data] = await Promise.all([
    fetch(HEALTH, { headers: authorization() }).then((r) => r.json()),
    can("admin") ? fetch(CONFIG, { headers: authorization() }).then((r) => r.text()) : Promise.resolve("(shown to admins only)"),
    gql("{ versionCount tenantCount sourceMigrations { file migrationType } }"),
  ]);
  const count = (label, value) => el("div", { class: "card" }, el("div", { class: "muted" }, label), el("div", { class: "value" }, value));
  const kinds = (type) => data.sourceMigrations.filter((m) => m.migrationType === type).length;
  show(
    "Overview",
    el("div", { class: "cards" },
      count("Health", el("span", { class: `badge ${health.status === "UP" ? "up" : "down"}`, id: "health-status" }, health.status)),
      count("Versions", data.versionCount),
      count("Tenants", data.tenantCount),
      count("Source migrations", data.sourceMigrations.length),
      count("Tenant migrations", kinds("TenantMigration")),
    ),
    el("h2", {}, "Health checks"),
    table([["Check"], ["Status"], ["Details"]], (health.checks ?? []).map((check) =>
      el("tr", {}, el("td", {}, check.name), el("td", {}, el("span", { class: `badge ${check.status === "UP" ? "up" : "down"}` }, check.status)), el("td", { class: "mono" }, check.data?.details ?? "")))),
    el("h2", {}, "Configuration (secrets hidden)"),
    el("pre", { id: "config" }, config),
  );
}

// ---- Versions --------------------------------------------------------------

// The newest versions first, a page at a time: a fleet's every
// `createTenant` is a version, so the list grows with the fleet.
const VERSIONS_PAGE = 100;
const VERSION_FIELDS = "id name created requestId traceId";

async function versions() {
  const data = await gql(`query($last: Int!) { versionCount versions(last: $last) { ${VERSION_FIELDS} } }`, { last: VERSIONS_PAGE });
  if (data.versionCount === 0) return show("Versions", el("p", { class: "muted" }, "No versions yet."));
  const list = table([["Id", true], ["Name"], ["Created"], ["Request id"], ["Trace id"]], []);
  const rows = list.querySelector("tbody");
  const shown = el("p", { id: "versions-count", class: "muted" });
  const older = el("button", { type: "button", id: "older-versions", onclick: () => more().catch((e) => fill(shown, failure(e))) }, "Older versions");
  let oldest;
  const add = (page) => {
    for (const v of [...page].reverse()) {
      rows.append(el("tr", {}, el("td", { class: "num" }, el("a", { href: `#/versions/${v.id}` }, v.id)), el("td", {}, v.name), el("td", {}, v.created),
        el("td", { class: "mono" }, v.requestId ?? ""), el("td", { class: "mono" }, v.traceId ?? "")));
    }
    if (page.length) oldest = page[0].id;
    fill(shown, `${rows.children.length} of ${data.versionCount} version(s) shown, newest first.`);
    older.hidden = page.length < VERSIONS_PAGE || rows.children.length >= data.versionCount;
  };
  async function more() {
    const next = await gql(`query($last: Int!, $before: Int!) { versions(last: $last, before: $before) { ${VERSION_FIELDS} } }`, { last: VERSIONS_PAGE, before: oldest });
    add(next.versions);
  }
  add(data.versions);
  show("Versions", shown, list, el("div", { class: "buttons" }, older));
}

// A version over a fleet holds a row per tenant and file (200,000 over
// 10,000 tenants): the page shows the first VERSION_ROWS of them.
const VERSION_ROWS = 200;

async function version(id) {
  const data = await gql("query($id: Int!, $first: Int!) { version(id: $id) { id name created requestId traceId dbMigrations(first: $first) { id file schema migrationType created } } }", { id, first: VERSION_ROWS + 1 });
  const v = data.version;
  if (!v) return show(`Version ${id}`, el("p", { class: "error" }, "No such version."));
  const more = v.dbMigrations.length > VERSION_ROWS;
  const rows = v.dbMigrations.slice(0, VERSION_ROWS);
  show(
    `Version ${v.id}: ${v.name}`,
    el("p", {}, el("a", { href: "#/versions" }, "← All versions")),
    el("p", { id: "version-count" }, `Created ${v.created}`, v.requestId ? ` by request ${v.requestId}` : "", v.traceId ? `, trace ${v.traceId}` : "",
      more ? `; the first ${VERSION_ROWS} of its migrations:` : `; ${rows.length} migration(s).`),
    table([["Id", true], ["File"], ["Schema"], ["Type"], ["Created"]], rows.map((m) =>
      el("tr", {}, el("td", { class: "num" }, m.id), el("td", { class: "mono" }, m.file), el("td", {}, m.schema), el("td", {}, m.migrationType), el("td", {}, m.created)))),
    more ? el("p", { class: "muted", id: "version-more" }, "More not shown: the API's ", el("span", { class: "mono" }, "dbMigrations"), " without ", el("span", { class: "mono" }, "first"), " lists every one.") : null,
  );
}

// ---- Sources ---------------------------------------------------------------

async function sources(params) {
  const filters = {};
  for (const key of ["name", "sourceDir", "file", "migrationType"]) if (params.get(key)) filters[key] = params.get(key);
  const data = await gql("query($filters: SourceMigrationFilters) { sourceMigrations(filters: $filters) { file name sourceDir migrationType checkSum } }", { filters });
  const field = (name, label) => el("label", {}, label, el("input", { name, value: params.get(name) ?? "", autocomplete: "off" }));
  const type = el("select", { name: "migrationType" }, el("option", { value: "" }, "any"),
    ["SingleMigration", "TenantMigration", "SingleScript", "TenantScript"].map((t) => el("option", { value: t, selected: params.get("migrationType") === t }, t)));
  const form = el("form", { class: "inline", role: "search", onsubmit: (event) => {
    event.preventDefault();
    const query = new URLSearchParams([...new FormData(form)].filter(([, v]) => v));
    location.hash = `#/sources?${query}`;
  } }, field("name", "Name"), field("sourceDir", "Directory"), field("file", "File"), el("label", {}, "Type", type), el("button", { type: "submit" }, "Filter"));
  const viewer = el("section", { id: "viewer", "aria-live": "polite" });
  const view = async (file) => {
    const found = await gql("query($file: String!) { sourceMigration(file: $file) { file contents } }", { file });
    fill(viewer, el("h2", {}, found.sourceMigration.file), el("pre", { class: "contents", tabindex: "0" }, found.sourceMigration.contents));
    viewer.querySelector("pre").focus();
  };
  show(
    "Sources",
    form,
    el("p", { class: "muted" }, `${data.sourceMigrations.length} source migration(s).`),
    table([["File"], ["Type"], ["Checksum"], [""]], data.sourceMigrations.map((m) =>
      el("tr", {}, el("td", { class: "mono" }, m.file), el("td", {}, m.migrationType), el("td", { class: "mono" }, m.checkSum.slice(0, 12)),
        el("td", {}, el("button", { type: "button", onclick: () => view(m.file).catch((e) => fill(viewer, failure(e))) }, "View"))))),
    viewer,
  );
}

// ---- Fleet -----------------------------------------------------------------

// A tenant's row comes as `cells`, one letter per file (one string per
// tenant, not a value per cell: the answer stays small at 50,000 tenants).
const STATE = {
  A: ["applied", "✓", "applied"],
  P: ["pending", "•", "pending"],
  D: ["drifted", "!", "drifted: changed since applied"],
  U: ["unknown", "?", "unknown: its shard did not answer"],
};

// The matrix reads its rows a page at a time (FLEET_PAGE), the fleet's
// tallies beside them: a fleet that fits in one page is searched here, a
// larger one by the service (`nameContains`, `shard`), and each page is read
// when its rows scroll into view — a 100,000-tenant fleet never crosses the
// wire whole.
const FLEET_PAGE = 1000;
const FLEET_ROW = "name shard cells";
const FLEET_ROWS = `query ($offset: Int!, $name: String, $shard: String) {
  fleet { tenants(first: ${FLEET_PAGE}, offset: $offset, nameContains: $name, shard: $shard) { ${FLEET_ROW} } } }`;
const FLEET_SEARCH = `query ($name: String, $shard: String) {
  fleet { tally(nameContains: $name, shard: $shard) { tenants }
    tenants(first: ${FLEET_PAGE}, nameContains: $name, shard: $shard) { ${FLEET_ROW} } } }`;

/** "@b" asks for shard b's tenants; anything else, names containing it. */
function fleetFilter(term) {
  return term.startsWith("@") ? { shard: term.slice(1) } : term ? { name: term } : {};
}

/** Rows the service answers page by page: `count` of them, the pages read
 * so far by number; `want` reads those a range of rows needs, once each. */
function pagedRows(count, firstPage, filter, onPage, onError) {
  const pages = new Map([[0, firstPage]]);
  const reading = new Set();
  return {
    count,
    at: (i) => pages.get(Math.floor(i / FLEET_PAGE))?.[i % FLEET_PAGE],
    want(first, last) {
      for (let p = Math.floor(first / FLEET_PAGE); p * FLEET_PAGE < last; p++) {
        if (pages.has(p) || reading.has(p)) continue;
        reading.add(p);
        gql(FLEET_ROWS, { offset: p * FLEET_PAGE, ...filter })
          .then((data) => { pages.set(p, data.fleet.tenants); onPage(); })
          .catch(onError)
          .finally(() => reading.delete(p));
      }
    },
  };
}

/** Rows in hand: every one, searched here. */
function listedRows(list) {
  return { count: list.length, at: (i) => list[i], want() {} };
}

async function fleet() {
  const data = await gql(`{ fleet { files tally { tenants behind drifted unknown } shards { shard tenants behind unknown }
    tenants(first: ${FLEET_PAGE}) { ${FLEET_ROW} } } quarantine { tenant cause } }`);
  const { files, tally, shards } = data.fleet;
  const everyRow = data.fleet.tenants.length >= tally.tenants ? data.fleet.tenants : null;
  const held = new Map(data.quarantine.map((q) => [q.tenant, q.cause]));
  const columns = `minmax(140px, 220px) repeat(${Math.max(files.length, 1)}, minmax(36px, 1fr))`;
  const head = el("div", { class: "matrix-head", role: "row" },
    el("span", { role: "columnheader" }, "Tenant"),
    files.map((file, i) => el("span", { role: "columnheader", class: "cell", title: file }, String(i + 1))));
  head.style.gridTemplateColumns = columns;
  const spacer = el("div", { class: "matrix-spacer" });
  const body = el("div", { class: "matrix-body", tabindex: "0", role: "rowgroup", "aria-label": "Tenants" }, spacer);
  const counter = el("p", { class: "muted", id: "fleet-count" });
  const problem = el("div", { id: "fleet-problem", "aria-live": "polite" });
  const failed = (error) => {
    if (!(error instanceof SignedOut)) fill(problem, failure(error));
  };
  const table = el("div", { class: "matrix", role: "table", "aria-label": "Tenants × tenant migrations" }, head, body);
  const row = (i, tenant) => {
    if (!tenant) return el("div", { class: "matrix-row reading", role: "row", "aria-busy": "true" }, el("span", { role: "rowheader", class: "muted" }, "…"));
    const cause = held.get(tenant.name);
    return el("div", { class: cause ? "matrix-row quarantined" : "matrix-row", role: "row", "data-tenant": tenant.name },
      el("span", { role: "rowheader", title: cause ? `quarantined (${cause}): later versions skip it` : tenant.name },
        tenant.name, tenant.shard ? el("span", { class: "shard muted" }, ` @${tenant.shard}`) : null,
        cause ? el("span", { class: "badge" }, " quarantined") : null),
      Array.from(tenant.cells, (state, j) => {
        const [css, symbol, words] = STATE[state];
        return el("span", { role: "cell", class: `cell ${css}`, title: `${files[j]}: ${words}`, "aria-label": `${files[j]}: ${words}` }, symbol);
      }));
  };
  const render = () => {
    const first = Math.max(0, Math.floor(body.scrollTop / ROW_HEIGHT) - 5);
    const last = Math.min(shown.count, first + Math.ceil(body.clientHeight / ROW_HEIGHT) + 10);
    shown.want(first, last);
    const rows = [];
    for (let i = first; i < last; i++) {
      const node = row(i, shown.at(i));
      node.style.gridTemplateColumns = columns;
      node.style.top = `${i * ROW_HEIGHT}px`;
      rows.push(node);
    }
    spacer.style.height = `${shown.count * ROW_HEIGHT}px`;
    table.setAttribute("aria-rowcount", String(shown.count + 1));
    fill(body, spacer, ...rows);
  };
  let shown = everyRow ? listedRows(everyRow) : pagedRows(tally.tenants, data.fleet.tenants, {}, render, failed);
  // A sharded fleet: tenants per shard, behind per shard.
  const shardNote = shards.length
    ? `; shards: ${shards.map((s) => `${s.shard} ${s.tenants} (${s.unknown ? "not answering" : `${s.behind} behind`})`).join(", ")}`
    : "";
  const summary = () => (counter.textContent = `${shown.count} of ${tally.tenants} tenant(s) shown; ${tally.behind} behind, ${tally.drifted} drifted; ${files.length} tenant migration(s)${held.size ? `; ${held.size} quarantined` : ""}${tally.unknown ? `; ${tally.unknown} unknown (their shard did not answer)` : ""}${shardNote}.`);
  const showRows = (rows) => {
    shown = rows;
    body.scrollTop = 0;
    summary();
    render();
  };
  let asked = 0;
  let typing;
  const search = el("input", { type: "search", id: "tenant-search", placeholder: "tenant name, or @shard", autocomplete: "off", oninput: () => {
    const term = search.value.trim().toLowerCase();
    const filter = fleetFilter(term);
    if (everyRow) {
      showRows(listedRows(!term ? everyRow
        : filter.shard !== undefined ? everyRow.filter((t) => (t.shard ?? "").toLowerCase() === filter.shard)
        : everyRow.filter((t) => t.name.toLowerCase().includes(term))));
      return;
    }
    // The service searches; the newest search's answer wins.
    clearTimeout(typing);
    const mine = ++asked;
    typing = setTimeout(async () => {
      const found = await gql(FLEET_SEARCH, filter).catch(failed);
      if (!found || mine !== asked) return;
      const rows = pagedRows(found.fleet.tally.tenants, found.fleet.tenants, filter, () => rows === shown && render(), failed);
      showRows(rows);
    }, 200);
  } });
  body.addEventListener("scroll", () => requestAnimationFrame(render));
  summary();
  show(
    "Fleet",
    el("div", { class: "actions" }, previewPanel(), tenantPanel(), driftPanel(), quarantinePanel()),
    el("form", { class: "inline", role: "search", onsubmit: (e) => e.preventDefault() }, el("label", {}, "Search tenants", search)),
    counter,
    problem,
    el("div", { class: "legend" }, Object.values(STATE).map(([css, symbol, words]) => el("span", {}, el("span", { class: `cell ${css}` }, symbol), ` ${words}`))),
    table,
    el("p", { class: "muted" }, "Columns: ", files.map((file, i) => el("span", { class: "mono" }, `${i + 1} ${file}${i + 1 < files.length ? ", " : ""}`))),
  );
  render();
}

const SUMMARY = "summary { tenants migrationsGrandTotal singleMigrations tenantMigrationsTotal scriptsGrandTotal duration }";

// Fleet drift: every tenant's live schema against the tenants that recorded
// the same migrations (the API's `drift`; `strata drift` prints the same).
function driftPanel() {
  const out = el("div", { id: "drift-result", "aria-live": "polite" });
  const check = async () => {
    fill(out, el("p", { class: "muted" }, "Reading every tenant's catalog…"));
    const { drift } = await gql("{ drift { tenants changed outliers { tenant reference differences { kind name change expected found } } } }");
    if (drift.outliers.length === 0 && drift.changed.length === 0) {
      fill(out, el("p", { id: "drift-summary" }, `No drift: ${drift.tenants} tenant(s) look like the others that recorded the same migrations.`));
      return;
    }
    const sign = { added: "+", missing: "−", changed: "~" };
    fill(out,
      el("p", { id: "drift-summary", class: "error" }, `${drift.outliers.length} tenant(s) differ from their group; ${drift.changed.length} schema(s) changed since last migrated.`),
      el("ul", { class: "drift" }, drift.outliers.map((o) => el("li", {}, el("strong", {}, o.tenant), ` differs from ${o.reference}:`,
        el("ul", {}, o.differences.map((d) => el("li", { class: "mono" }, `${sign[d.change]} ${d.kind} ${d.name}: ${d.change === "changed" ? `${d.expected} → ${d.found}` : (d.found ?? d.expected)}`)))))),
      drift.changed.length ? el("p", { class: "muted" }, `Changed since the service last migrated them: ${drift.changed.join(", ")}`) : null,
    );
  };
  return el("section", { class: "panel", "aria-labelledby": "drift-title" },
    el("h2", { id: "drift-title" }, "Live schemas"),
    el("p", { class: "muted" }, "Compare every tenant's live schema with the tenants that recorded the same migrations."),
    el("div", { class: "buttons" }, el("button", { type: "button", id: "drift-button", onclick: () => check().catch((e) => fill(out, failure(e))) }, "Check drift")),
    out);
}

// The linter's findings on the files the preview would run (strata lint).
function lintFindings(p) {
  if (!p.findings.length && !p.unchecked.length) return el("p", { class: "muted", id: "lint-summary" }, "Lint: no findings.");
  return el("div", { id: "lint" },
    el("p", { id: "lint-summary", class: p.findings.some((f) => f.severity === "error") ? "error" : "" }, `Lint: ${p.findings.length} finding(s), ${p.unchecked.length} statement(s) not checked.`),
    el("ul", { class: "findings" }, p.findings.map((f) => el("li", { class: `finding ${f.severity}` },
      el("span", { class: "mono" }, `${f.file}:${f.line}:${f.column}`), ` ${f.severity} `, el("strong", {}, f.rule), `: ${f.message} — `, el("span", { class: "muted" }, f.advice)))),
    p.unchecked.length ? el("ul", { class: "unchecked" }, p.unchecked.map((u) => el("li", { class: "mono muted" }, `${u.file}:${u.line}:${u.column}: not checked: ${u.reason}`))) : null);
}

function previewPanel() {
  const out = el("div", { id: "preview", "aria-live": "polite" });
  const apply = el("button", { type: "button", class: "primary", id: "apply", disabled: true, onclick: () => confirmApply() }, "Apply…");
  const preview = async () => {
    fill(out, el("p", { class: "muted" }, "Running a dry run…"));
    const [plan, dry] = await Promise.all([
      gql("{ plan { nothingToDo refusedByDrift groups { schemas tenants files { file script } } drift { file schemas } findings { rule severity file line column message advice } unchecked { file line column reason } } }"),
      // A dry run is a mutation: deployers only.
      can("deploy")
        ? gql(`mutation { createVersion(input: { versionName: "console preview", dryRun: true }) { ${SUMMARY} } }`).catch((e) => ({ error: e }))
        : Promise.resolve({}),
    ]);
    const p = plan.plan;
    if (p.refusedByDrift) {
      fill(out, el("p", { class: "error" }, "Apply refuses to run: these files changed since they were applied:"), el("ul", {}, p.drift.map((d) => el("li", { class: "mono" }, `${d.file} (${d.schemas.length} schema(s))`))));
      apply.disabled = true;
      return;
    }
    // What would run, from the plan: files × the schemas that get them.
    let migrations = 0, scripts = 0;
    for (const g of p.groups) for (const f of g.files) f.script ? (scripts += g.schemas.length) : (migrations += g.schemas.length);
    const s = dry.createVersion?.summary;
    const line = p.nothingToDo
      ? "Nothing to apply."
      : s
        ? `Would apply ${s.migrationsGrandTotal} migration(s) (${s.singleMigrations} single-schema, ${s.tenantMigrationsTotal} in tenants) and ${s.scriptsGrandTotal} script(s); the dry run took ${s.duration.toFixed(2)} s and was rolled back.`
        : `Would apply ${migrations} migration(s) and ${scripts} script(s).`;
    fill(out,
      el("p", { id: "preview-summary" }, line),
      dry.error ? el("p", { class: "muted", id: "dry-run-note" }, `The dry run could not run (${dry.error.code}: ${dry.error.message}); the list below is the plan.`) : null,
      el("ul", { class: "groups" }, p.groups.map((g) => el("li", {}, `${g.tenants ? "tenants" : "schema"} ${g.schemas.slice(0, 5).join(", ")}${g.schemas.length > 5 ? `, and ${g.schemas.length - 5} more` : ""}: `, g.files.map((f) => f.file + (f.script ? " (script)" : "")).join(", ")))),
      lintFindings(p),
    );
    apply.disabled = p.nothingToDo;
  };
  return el("section", { class: "panel", "aria-labelledby": "preview-title" },
    el("h2", { id: "preview-title" }, "New version"),
    el("p", { class: "muted" }, "Preview what createVersion would do (a dry run, rolled back), then apply it."),
    el("div", { class: "buttons" }, el("button", { type: "button", id: "preview-button", onclick: () => preview().catch((e) => fill(out, failure(e))) }, "Preview"), can("deploy") ? apply : null),
    out);
}

// The confirmation dialog: `text`, an OK button labelled `ok`, the version
// name field when `name` is given (its default), then `run(name)`.
function confirmDialog({ text, ok, name, run }) {
  const dialog = document.getElementById("confirm");
  const field = document.getElementById("confirm-name");
  document.getElementById("confirm-title").textContent = ok;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = ok;
  field.closest("label").hidden = name === undefined;
  field.required = name !== undefined;
  field.value = name ?? "";
  dialog.returnValue = "";
  dialog.onclose = async () => {
    if (dialog.returnValue !== "confirm") return say(`Nothing done (${ok.toLowerCase()} cancelled).`);
    try {
      await run(field.value);
    } catch (e) {
      say(`${ok} failed: ${e.code ?? ""} ${e.message}`);
      main().append(failure(e));
    }
  };
  document.getElementById("confirm-cancel").onclick = () => dialog.close("cancel");
  dialog.showModal();
  if (name !== undefined) field.select();
}

const versionName = (what) => `${what} ${new Date().toISOString().slice(0, 16).replace("T", " ")}`;
const quarantinedNote = (r) => (r.quarantined.length ? `; ${r.quarantined.length} tenant(s) failed and were quarantined (${r.quarantined.map((q) => q.tenant).join(", ")})` : "");

function confirmApply() {
  confirmDialog({
    text: "Apply every pending migration and script as a new version? This changes the database.",
    ok: "Apply",
    name: versionName("console"),
    run: async (name) => {
      const data = await gql(`mutation($name: String!) { createVersion(input: { versionName: $name }) { ${SUMMARY} version { id name } quarantined { tenant } } }`, { name });
      const r = data.createVersion;
      say(r.version ? `Version ${r.version.id} created: ${r.summary.migrationsGrandTotal} migration(s) applied${quarantinedNote(r)}.` : `Nothing to apply${quarantinedNote(r)}.`);
      await fleet();
    },
  });
}

// Tenants a failure budget put aside (the API's `quarantine`): retry them
// all as a new version, or release one (the next version takes it).
function quarantinePanel() {
  const out = el("div", { id: "quarantine", "aria-live": "polite" }, el("p", { class: "muted" }, "Loading…"));
  const release = (tenant) => confirmDialog({
    text: `Release ${tenant} from quarantine? Nothing runs now; the next version runs its pending migrations.`,
    ok: "Release",
    run: async () => {
      const data = await gql("mutation($t: [String!]!) { releaseQuarantined(tenantNames: $t) }", { t: [tenant] });
      say(`Released from quarantine: ${data.releaseQuarantined.join(", ") || "none"}.`);
      await fleet();
    },
  });
  const retry = () => confirmDialog({
    text: "Retry every quarantined tenant as a new version? This changes the database.",
    ok: "Retry",
    name: versionName("retry"),
    run: async (name) => {
      const data = await gql(`mutation($name: String!) { retryQuarantined(input: { versionName: $name }) { ${SUMMARY} version { id } releasedTenants quarantined { tenant } } }`, { name });
      const r = data.retryQuarantined;
      say(`Retried: ${r.releasedTenants.length} tenant(s) completed and released${quarantinedNote(r)}.`);
      await fleet();
    },
  });
  gql("{ quarantine { tenant file line column cause message failures } }").then(({ quarantine: rows }) => {
    if (!rows.length) return fill(out, el("p", { class: "muted", id: "quarantine-summary" }, "No tenant is quarantined."));
    fill(out,
      el("p", { id: "quarantine-summary", class: "error" }, `${rows.length} tenant(s) quarantined: later versions skip them.`),
      el("ul", { class: "quarantine" }, rows.map((r) => el("li", { "data-tenant": r.tenant },
        el("strong", {}, r.tenant), ` ${r.file}${r.line ? `:${r.line}${r.column ? `:${r.column}` : ""}` : ""} ${r.cause}, ${r.failures} failure(s): `,
        el("span", { class: "mono" }, r.message), " ",
        can("admin") ? el("button", { type: "button", class: "release", "aria-label": `Release ${r.tenant}`, onclick: () => release(r.tenant) }, "Release") : null))),
      can("deploy") ? el("div", { class: "buttons" }, el("button", { type: "button", id: "retry-button", onclick: retry }, "Retry all…")) : null);
  }).catch((e) => fill(out, failure(e)));
  return el("section", { class: "panel", "aria-labelledby": "quarantine-title" },
    el("h2", { id: "quarantine-title" }, "Quarantine"),
    el("p", { class: "muted" }, "Tenants a version failed in and went on without (failureBudget)."),
    out);
}

function tenantPanel() {
  if (!can("deploy")) return null;
  const out = el("div", { id: "tenant-result", "aria-live": "polite" });
  const tenant = el("input", { name: "tenant", id: "tenant-name", required: true, autocomplete: "off", maxlength: "63" });
  const form = el("form", { class: "inline", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const data = await gql(`mutation($tenant: String!, $version: String!) { createTenant(input: { tenantName: $tenant, versionName: $version }) { ${SUMMARY} version { id } } }`,
        { tenant: tenant.value, version: `create tenant ${tenant.value}` });
      say(`Tenant ${tenant.value} created in version ${data.createTenant.version?.id}.`);
      await fleet();
    } catch (e) {
      fill(out, failure(e));
    }
  } }, el("label", {}, "Tenant name", tenant), el("button", { type: "submit" }, "Create tenant"));
  return el("section", { class: "panel", "aria-labelledby": "tenant-title" },
    el("h2", { id: "tenant-title" }, "New tenant"),
    el("p", { class: "muted" }, "Creates the schema and applies the tenant migrations (the server checks the name)."),
    form, out);
}

// ---- Rollouts --------------------------------------------------------------

// Rollouts as the service stores and drives them: each wave's state, the
// operations that apply (behind confirmation), the events (who did what).
// The page reads them again every 2 s while it is shown.
let rolloutTimer;

const ROLLOUT_FIELDS = "id versionName status completedWaves notBefore startedBy desiredSchema waves { wave state plan } events { at action wave requestId actor detail }";

// A wave as shown: as written, or a desired schema's wave by its plan and
// how many tenants share it (the names, which can be thousands, on hover).
function waveLabel(w) {
  if (!w.plan) return el("span", { class: "mono" }, w.wave);
  const tenants = w.wave.split(":")[0].split(",");
  return el("span", { class: "mono", title: tenants.join(", ") }, `plan ${w.plan.slice(0, 12)} (${tenants.length} tenant(s))`);
}

function rolloutCard(r, expanded) {
  const operations = ({ AWAITING_APPROVAL: ["Approve", "Pause", "Cancel"], RUNNING: ["Pause", "Cancel"], SOAKING: ["Pause", "Cancel"], PAUSED: ["Resume", "Cancel"], STOPPED: ["Resume", "Cancel"] }[r.status] ?? [])
    // Approving needs the approver role, and another person than the starter.
    .filter((name) => (name === "Approve" ? can("approve") && (!r.startedBy || r.startedBy !== me.actor) : can("deploy")));
  const done = { Approve: "approved", Pause: "paused", Resume: "resumed", Cancel: "cancelled" };
  const operate = (name) => confirmDialog({
    text: `${name} rollout ${r.id} (${r.versionName})${name === "Approve" && r.waves[r.completedWaves]?.plan ? `: its next wave runs plan ${r.waves[r.completedWaves].plan}` : ""}?${name === "Resume" && r.status === "STOPPED" ? " Its failed wave runs again." : ""}${name === "Cancel" ? " No wave of it runs again." : ""}`,
    ok: name,
    run: async () => {
      await gql(`mutation($id: Int!) { ${name.toLowerCase()}Rollout(id: $id) { id status } }`, { id: r.id });
      say(`Rollout ${r.id}: ${done[name]}.`);
      await rollouts();
    },
  });
  const last = r.events.at(-1);
  // What each wave did, as its last run said (a failure until it runs again).
  const results = new Map();
  for (const e of r.events) if (e.action === "wave-completed" || e.action === "wave-failed") results.set(e.wave, e);
  const result = (i) => {
    const e = results.get(i + 1);
    return e ? `: ${e.action === "wave-failed" ? "failed: " : ""}${e.detail}` : "";
  };
  return el("section", { class: "panel rollout", "data-rollout": String(r.id), "aria-labelledby": `rollout-${r.id}` },
    el("h2", { id: `rollout-${r.id}` }, `Rollout ${r.id}: ${r.versionName}${r.desiredSchema ? ` to ${r.desiredSchema}` : ""} `, el("span", { class: `badge ${r.status === "STOPPED" ? "down" : r.status === "COMPLETED" ? "up" : ""}`, "data-status": r.status }, r.status)),
    el("ol", { class: "waves" }, r.waves.map((w, i) => el("li", { class: `wave ${w.state.toLowerCase()}` }, waveLabel(w), ` — ${w.state.toLowerCase()}${result(i)}`))),
    r.notBefore ? el("p", { class: "muted" }, `The next wave runs after ${r.notBefore}.`) : null,
    last ? el("p", { class: last.action === "wave-failed" ? "error" : "muted" }, `Last: ${last.action}${last.wave ? ` (wave ${last.wave})` : ""} by ${last.actor ?? last.requestId} at ${last.at}${last.detail ? `: ${last.detail}` : ""}`) : null,
    el("div", { class: "buttons" }, operations.map((name) => el("button", { type: "button", "aria-label": `${name} rollout ${r.id}`, onclick: () => operate(name) }, name))),
    el("details", expanded ? { open: "" } : {}, el("summary", {}, `${r.events.length} event(s)`),
      table([["At"], ["Action"], ["Wave"], ["By"], ["Detail"]], r.events.map((e) =>
        el("tr", {}, el("td", {}, e.at), el("td", {}, e.action), el("td", { class: "num" }, e.wave ?? ""), el("td", { class: "mono" }, e.actor ?? e.requestId), el("td", {}, e.detail))))));
}

async function rollouts() {
  clearTimeout(rolloutTimer);
  const data = await gql(`{ rollouts { ${ROLLOUT_FIELDS} } }`);
  const list = [...data.rollouts].reverse();
  // A refresh keeps the event lists a person opened.
  const expanded = new Set([...document.querySelectorAll(".rollout details[open]")].map((d) => d.closest(".rollout").dataset.rollout));
  show(
    "Rollouts",
    el("p", { class: "muted" }, "Waves of a version run by the service, with gates between them. Start one with ", el("span", { class: "mono" }, "strata rollout start"), " or the API's startRollout."),
    ...(list.length === 0 ? [el("p", { class: "muted", id: "rollouts-empty" }, "No rollout yet.")] : list.map((r) => rolloutCard(r, expanded.has(String(r.id))))),
  );
  // Live while shown (and no dialog is open).
  rolloutTimer = setTimeout(() => {
    if (location.hash.startsWith("#/rollouts") && !document.getElementById("confirm").open) rollouts().catch(() => {});
  }, 2000);
}

// ---- Backfills -------------------------------------------------------------

// Each backfill file over the fleet: one bar for all its tenants' rows and
// how many are in each state, then a bar per tenant (those not done first,
// at most BACKFILL_ROWS of them: a fleet of 10,000 keeps a short page). The
// service sums each file up (`backfillFiles`): the page reads a few
// kilobytes whatever the fleet's size. Pause, resume and cancel act on
// every tenant's backfill, behind a confirmation. The page reads them
// again every 2 s while it is shown.
let backfillTimer;
const BACKFILL_ROWS = 200;
const BACKFILL_STATES = ["RUNNING", "PAUSED", "FAILED", "CANCELLED", "DONE"];

/** `n` seconds as `1 h 02 min`, `3 min 05 s` or `12 s`. */
function duration(n) {
  if (n >= 3600) return `${Math.floor(n / 3600)} h ${String(Math.floor((n % 3600) / 60)).padStart(2, "0")} min`;
  if (n >= 60) return `${Math.floor(n / 60)} min ${String(n % 60).padStart(2, "0")} s`;
  return `${n} s`;
}

/**
 * A bar of `done` of `total` rows: empty before its first batch, full once
 * `finished`; a repeated backfill has no total (indeterminate while it runs).
 */
function bar(done, total, finished, started, label) {
  const attributes = { "aria-label": label };
  if (total > 0) Object.assign(attributes, { max: total, value: Math.min(done, total) });
  else if (finished || !started) Object.assign(attributes, { max: 1, value: finished ? 1 : 0 });
  return el("progress", attributes);
}

function backfillFile(summary) {
  const { file, rowsDone: done, rowsEstimated: estimated, notStarted: waiting, rowsPerSecond: rate, shown: rows } = summary;
  const counts = Object.fromEntries(BACKFILL_STATES.map((state) => [state, summary[state.toLowerCase()]]));
  const eta = summary.etaSeconds ?? 0;
  const share = estimated > 0 ? ` (${Math.floor((100 * done) / estimated)} %)` : "";
  return el("section", { class: "panel backfill", "data-file": file, "aria-label": `Backfill ${file}` },
    el("h2", { class: "mono" }, file),
    el("div", { class: "backfill-total" }, bar(done, estimated, counts.DONE === summary.tenants, summary.tenants > waiting, `${file}: ${done} of ${estimated} rows`),
      el("span", { "data-total": "" }, `${done} of ${estimated} row(s)${share}`)),
    el("p", { class: "muted", "data-counts": "" }, BACKFILL_STATES.filter((state) => counts[state] > 0).map((state) => `${counts[state]} ${state.toLowerCase()}`).join(", "),
      waiting > 0 ? ` (${waiting} not started: their rows are not counted yet)` : "",
      counts.RUNNING > 0 && rate > 0 ? ` — ${Math.round(rate)} row(s)/s, about ${duration(eta)} left` : ""),
    table([["Tenant"], ["State"], ["Progress"], ["Rows", true], ["Rows/s", true], ["Left", true], ["Error"]], rows.map((r) =>
      el("tr", { "data-tenant": r.tenant },
        el("td", { class: "mono" }, r.tenant),
        el("td", {}, el("span", { class: `badge ${r.state === "DONE" ? "up" : r.state === "FAILED" || r.state === "CANCELLED" ? "down" : "pending"}` }, r.state)),
        el("td", {}, bar(r.rowsDone, r.rowsEstimated, r.state === "DONE", r.batches > 0 || r.rowsEstimated > 0, `${r.tenant}: ${r.rowsDone} of ${r.rowsEstimated} rows`)),
        el("td", { class: "num" }, r.rowsEstimated > 0 ? `${r.rowsDone} / ${r.rowsEstimated}` : String(r.rowsDone)),
        el("td", { class: "num" }, r.rowsPerSecond === null ? "" : Math.round(r.rowsPerSecond)),
        el("td", { class: "num" }, r.state === "RUNNING" && r.etaSeconds !== null ? duration(r.etaSeconds) : ""),
        el("td", { class: "error" }, r.lastError ?? "")))),
    summary.tenants > rows.length ? el("p", { class: "muted" }, `${summary.tenants - rows.length} more tenant(s), done or further down the list, not shown.`) : null);
}

async function backfills() {
  clearTimeout(backfillTimer);
  const files = (await gql(`{ backfillFiles(shown: ${BACKFILL_ROWS}) { file tenants running paused failed cancelled done rowsDone rowsEstimated notStarted rowsPerSecond etaSeconds shown { tenant state rowsDone rowsEstimated batches rowsPerSecond etaSeconds lastError } } }`)).backfillFiles;
  const operate = (name, done) => confirmDialog({
    text: name === "Cancel"
      ? "Cancel every running or paused backfill? Their tenants are quarantined; a retry resumes each after its last committed batch."
      : `${name} every ${name === "Pause" ? "running" : "paused"} backfill?`,
    ok: name,
    run: async () => {
      const moved = (await gql(`mutation { ${name.toLowerCase()}Backfills { tenant } }`))[`${name.toLowerCase()}Backfills`];
      say(`${moved.length} backfill(s) ${done}.`);
      await backfills();
    },
  });
  const has = (state) => files.some((f) => f[state.toLowerCase()] > 0);
  const operations = can("deploy") ? [has("RUNNING") && ["Pause", "paused"], has("PAUSED") && ["Resume", "resumed"], (has("RUNNING") || has("PAUSED")) && ["Cancel", "cancelled"]].filter(Boolean) : [];
  show(
    "Backfills",
    el("p", { class: "muted" }, "Data changes in batches (", el("span", { class: "mono" }, "strata:backfill"), " files), run after their version, paced per database server."),
    operations.length > 0 ? el("div", { class: "buttons" }, operations.map(([name, done]) => el("button", { type: "button", "aria-label": `${name} backfills`, onclick: () => operate(name, done) }, `${name} all`))) : null,
    ...(files.length === 0 ? [el("p", { class: "muted", id: "backfills-empty" }, "No backfill has started.")] : files.map(backfillFile)),
  );
  backfillTimer = setTimeout(() => {
    if (location.hash.startsWith("#/backfills") && !document.getElementById("confirm").open) backfills().catch(() => {});
  }, 2000);
}

// ---- Desired state -----------------------------------------------------------

// Every tenant's way to the configured desired schema (`desiredSchema`),
// tenants grouped by plan, largest first: each plan's statements (those
// that lose data marked) and what the linter finds in them. A deployer
// rolls it out from here: one wave per plan, an approval between each two,
// each approval bound to its plan (the Rollouts page operates it).
const DESIRED_TENANTS_SHOWN = 20;

function desiredGroup(group, index) {
  const inPlace = group.steps.length === 0 && group.unplannable.length === 0;
  const names = group.tenants.slice(0, DESIRED_TENANTS_SHOWN).join(", ") + (group.tenants.length > DESIRED_TENANTS_SHOWN ? `, and ${group.tenants.length - DESIRED_TENANTS_SHOWN} more` : "");
  return el("section", { class: "panel desired-group", "data-plan": group.plan, "aria-labelledby": `plan-${index}` },
    el("h2", { id: `plan-${index}` }, inPlace ? "In the desired state " : `Plan ${group.plan.slice(0, 12)} `,
      el("span", { class: "badge" }, `${group.tenants.length} tenant(s)`), " ",
      group.destructive ? el("span", { class: "badge down", "data-destructive": "" }, "loses data") : null),
    el("p", { class: "mono muted", title: group.tenants.join(", ") }, names),
    inPlace ? null : el("ol", { class: "steps" }, group.steps.map((step) =>
      el("li", { class: step.destructive ? "destructive" : null }, el("pre", { class: "mono" }, `${step.sql};`), step.destructive ? el("span", { class: "badge down" }, "loses data") : null))),
    group.unplannable.length ? el("p", { class: "error" }, `Not planned: ${group.unplannable.join("; ")}`) : null,
    group.findings.length ? el("ul", { class: "findings" }, group.findings.map((f) => el("li", {}, el("span", { class: `badge ${f.severity === "error" ? "down" : "pending"}` }, f.rule), ` ${f.message}`))) : null);
}

async function desired() {
  let diff;
  try {
    diff = (await gql("{ desiredDiff { desired tenants differing groups { plan tenants steps { sql destructive } destructive unplannable findings { rule severity message } } } }")).desiredDiff;
  } catch (error) {
    // No desiredSchema configured, or the file refused: said as it is.
    if (error.code !== "INVALID_INPUT") throw error;
    show("Desired state", el("p", { class: "muted", id: "desired-none" }, error.message));
    return;
  }
  const plans = diff.groups.filter((g) => g.steps.length > 0 || g.unplannable.length > 0);
  const destructive = plans.filter((g) => g.destructive).length;
  const start = () => confirmDialog({
    text: `Roll out the desired schema: ${plans.length} plan(s), one wave each, largest first, an approval between each two?${destructive ? ` The ${destructive} plan(s) that lose data are left out.` : ""}`,
    ok: "Roll out",
    name: versionName("desired schema"),
    run: async (name) => {
      const started = (await gql("mutation($name: String!, $destructive: Destructive) { startRollout(versionName: $name, desiredSchema: true, destructive: $destructive) { id waves { wave } } }",
        { name, destructive: destructive ? "Skip" : null })).startRollout;
      say(`Rollout ${started.id} started: ${started.waves.length} wave(s).`);
      location.hash = "#/rollouts";
    },
  });
  show(
    "Desired state",
    el("p", { id: "desired-count" }, `${diff.differing} of ${diff.tenants} tenant(s) differ from the desired schema; ${plans.length} plan(s).`),
    can("deploy") && plans.length > 0 ? el("div", { class: "buttons" }, el("button", { type: "button", id: "desired-rollout", onclick: start }, "Roll out, one wave per plan")) : null,
    diff.groups.map(desiredGroup),
  );
}

// ---- Signing in ------------------------------------------------------------

/** The sign-in page: a token pasted once (kept for this browser session). */
function signIn(message) {
  // A route ending here while the form is shown (a hash change as a token
  // is typed) keeps the form and what was typed: drawn again, the token
  // went with the old form and the button submitted the empty new one.
  if (!message && document.getElementById("sign-in")) return;
  const input = el("input", { type: "password", id: "token-input", name: "token", required: true, autocomplete: "off", placeholder: "strata_…" });
  show("Sign in",
    message ? el("p", { class: "error", role: "alert", id: "sign-in-error" }, message) : null,
    el("p", { class: "muted" }, "This service requires authentication. Paste an API token (", el("span", { class: "mono" }, "strata token create --name NAME --role ROLE"), "); it is kept for this browser session only."),
    el("form", { class: "inline", id: "sign-in", onsubmit: async (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      await route();
    } }, el("label", {}, "API token", input), el("button", { type: "submit", class: "primary" }, "Sign in")));
}

/** Who the console acts as; shown in the header with a way to sign out. */
async function identify() {
  const health = await fetch(HEALTH).then((r) => r.json());
  authConfigured = health.auth === "configured";
  if (authConfigured && !sessionStorage.getItem(TOKEN_KEY)) return false;
  me = (await gql("{ identity { actor roles } }")).identity;
  const who = document.getElementById("who");
  fill(who, ...(authConfigured
    ? [el("span", { id: "who-actor" }, `${me.actor} (${me.roles.join(", ") || "no role"})`), " ",
      el("button", { type: "button", id: "sign-out", onclick: () => { sessionStorage.removeItem(TOKEN_KEY); fill(who); route(); } }, "Sign out")]
    : []));
  return true;
}

// ---- Routing ---------------------------------------------------------------

async function route() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  const page = parts[0] || "overview";
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.page === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  try {
    if (!(await identify())) return signIn();
  } catch (error) {
    if (error instanceof SignedOut) return signIn();
    sessionStorage.removeItem(TOKEN_KEY);
    return signIn(error.code === "UNAUTHENTICATED" ? `The token was refused: ${error.message}` : failure(error).textContent);
  }
  try {
    if (page === "versions" && parts[1]) await version(Number(parts[1]));
    else if (page === "versions") await versions();
    else if (page === "sources") await sources(new URLSearchParams(query));
    else if (page === "fleet") await fleet();
    else if (page === "rollouts") await rollouts();
    else if (page === "backfills") await backfills();
    else if (page === "desired") await desired();
    else await overview();
  } catch (error) {
    if (error instanceof SignedOut) return;
    show("Error", failure(error));
  }
  main().focus();
}

addEventListener("hashchange", route);
route();
