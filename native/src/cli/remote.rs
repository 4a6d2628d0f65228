//! `strata --server URL …`: the command line as a client of a running
//! service, so a CI job needs a token (`STRATA_TOKEN`), not the database's
//! credentials. `apply`, `plan`, `status`, `revert`, `repair`, `tenants` (and
//! `tenants add`), `drift`, `diff`, `lint`, `rollout`, `quarantine` and `audit` run
//! through the API: the inputs are the API's own input types, the answers
//! are read into the API's own answer types (`graphql::types`), and each
//! operation is a constant document, checked against the schema by a unit
//! test — no GraphQL is assembled from strings at run time.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use strata_core::auth::audit::{self, Sealed};

use crate::cli::answers::{PlanAnswer, print_status, refused_by_drift, render_active_rollouts};
use crate::cli::output::{print_json, print_released, printable};
use crate::cli::{
    ApplyArgs, AuditAction, AuditArgs, BackfillAction, BackfillArgs, DiffArgs, DriftArgs, Exit, LintArgs, OnDatabase,
    PlanArgs, QuarantineAction, QuarantineArgs, RepairArgs, RevertArgs, RolloutAction, RolloutArgs, StatusArgs,
    TenantsAction, TenantsArgs,
};
use crate::db::BackfillMove;
use crate::graphql::desired::{DesiredApplyDto, DesiredDiffDto, DestructiveDto};
use crate::graphql::preview::{PlanPreviewDto, RepairDto, StatusDto};
use crate::graphql::types::{
    ActionDto, AuditRowDto, BackfillDto, BackfillFileDto, BackfillWaitDto, CreateResultsDto, QuarantinedTenantDto,
    RetryInput, RolloutDto, SchemaDriftDto, TenantInput, TenantsInput, VersionInput,
};

/// The fields of `CreateResults` the command line reads.
macro_rules! results {
    () => {
        "summary { startedAt duration tenants singleMigrations tenantMigrations tenantMigrationsTotal \
         migrationsGrandTotal singleScripts tenantScripts tenantScriptsTotal scriptsGrandTotal } \
         version { id name created requestId parts { shard id } } \
         quarantined { tenant versionId file line column cause message failures requestId quarantined } \
         waitingOnBackfills { tenant file } skippedTenants releasedTenants"
    };
}

/// The fields of `Rollout` the command line reads.
macro_rules! rollout {
    () => {
        "id versionName status completedWaves notBefore failureBudget startedBy desiredSchema \
         waves { wave state plan } events { at action wave requestId actor detail }"
    };
}

/// The fields of `PlanPreview` the command line reads.
macro_rules! plan {
    () => {
        "nothingToDo refusedByDrift pending newTenant summary { tenants singleMigrations tenantMigrations \
         tenantMigrationsTotal migrationsGrandTotal singleScripts tenantScripts tenantScriptsTotal \
         scriptsGrandTotal } groups { schemas tenants files { file script execute } } outOfOrder { file schema after \
         } drift { file schemas sourceChecksum recordedChecksums } missing { file schemas } recordOnly histories { \
         history schemas } withoutHistory findings { \
         rule severity file line column message advice } unchecked { file line column reason } skippedTenants \
         activeRollouts { id versionName status wavesDone waves }"
    };
}

const CREATE_VERSION: &str =
    concat!("mutation($input: VersionInput!) { createVersion(input: $input) { ", results!(), " } }");
const CREATE_WAVE: &str = concat!(
    "mutation($input: VersionInput!, $tenantNames: [String!], $share: Int, $attribute: String) { ",
    "createVersionWave(input: $input, tenantNames: $tenantNames, share: $share, attribute: $attribute) { ",
    results!(),
    " } }"
);
const APPLY_DESIRED: &str = concat!(
    "mutation($input: VersionInput!, $desired: String, $destructive: Destructive, $group: String, ",
    "$directory: String) { applyDesiredSchema(input: $input, desired: $desired, destructive: $destructive, ",
    "group: $group, directory: $directory) { versions { ",
    results!(),
    " } left { tenants reason } } }"
);
const DESIRED_DIFF: &str = "query($desired: String, $directory: String) { desiredDiff(desired: $desired, \
                            directory: $directory) { desired tenants differing \
                            groups { plan tenants steps { sql destructive } destructive unplannable findings { rule \
                            severity file line column message advice } } } }";
const CREATE_TENANT: &str =
    concat!("mutation($input: TenantInput!) { createTenant(input: $input) { ", results!(), " } }");
const CREATE_TENANTS: &str =
    concat!("mutation($input: TenantsInput!) { createTenants(input: $input) { ", results!(), " } }");
const REVERT: &str = concat!(
    "mutation($input: VersionInput!, $steps: Int, $to: String, $tenantNames: [String!]) { ",
    "revertVersion(input: $input, steps: $steps, to: $to, tenantNames: $tenantNames) { ",
    results!(),
    " } }"
);
const TENANTS: &str = "query($first: Int!, $after: String) { tenants(first: $first, after: $after) { name shard } }";
const SHARDS: &str = "query { shards { name reachable } quarantine { tenant } }";
/// Tenants read per request by `tenants --server`: the largest page the
/// service counts as a light read (a larger one waits for a fleet slot).
const TENANTS_PER_PAGE: usize = crate::graphql::limits::LIGHT_PAGE as usize;
const DRIFT: &str = "query { drift { tenants groups { recorded fingerprint tenants outliers } outliers { tenant \
                     fingerprint reference migrations differences { kind name change expected found } } changed \
                     changedSchemas { schema stored live } } }";
const PLAN: &str = concat!("query($action: Action) { plan(action: $action) { ", plan!(), " } }");
const STATUS: &str = "query($versions: Int!) { status(versions: $versions) { versions { id name created requestId \
                      parts { shard id } } versionCount tenants pending { schema migrations quarantined } drift { \
                      file schemas sourceChecksum recordedChecksums } missing { file schemas } unreachableShards { \
                      shard reason tenants } activeRollouts { id versionName status wavesDone waves } } }";
const REPAIR: &str = "mutation($files: [String!], $versionName: String!, $dryRun: Boolean!) { repair(files: $files, \
                      versionName: $versionName, dryRun: $dryRun) { checksums { file checksum recorded schemas } \
                      removals { file schemas } } }";
const ROLLOUTS: &str = concat!("query { rollouts { ", rollout!(), " } }");
const START_ROLLOUT: &str = concat!(
    "mutation($versionName: String!, $waves: [String!]!, $failureBudget: String, $desired: String, ",
    "$desiredSchema: Boolean!, $destructive: Destructive) { ",
    "startRollout(versionName: $versionName, waves: $waves, failureBudget: $failureBudget, desired: $desired, ",
    "desiredSchema: $desiredSchema, destructive: $destructive) { ",
    rollout!(),
    " } }"
);
const APPROVE: &str = concat!("mutation($id: Int!) { approveRollout(id: $id) { ", rollout!(), " } }");
const PAUSE: &str = concat!("mutation($id: Int!) { pauseRollout(id: $id) { ", rollout!(), " } }");
const RESUME: &str = concat!("mutation($id: Int!) { resumeRollout(id: $id) { ", rollout!(), " } }");
const CANCEL: &str = concat!("mutation($id: Int!) { cancelRollout(id: $id) { ", rollout!(), " } }");
const BACKFILLS: &str = "query { backfills { tenant file state rowsDone rowsEstimated batches rowsPerSecond etaSeconds lastError updated } }";
const BACKFILL_FILES: &str = "query($shown: Int!) { backfillFiles(shown: $shown) { file tenants running paused failed \
     cancelled done rowsDone rowsEstimated notStarted rowsPerSecond etaSeconds shown { tenant file state rowsDone \
     rowsEstimated batches rowsPerSecond etaSeconds lastError updated } } }";
const PAUSE_BACKFILLS: &str =
    "mutation($tenantNames: [String!]) { pauseBackfills(tenantNames: $tenantNames) { tenant file } }";
const RESUME_BACKFILLS: &str =
    "mutation($tenantNames: [String!]) { resumeBackfills(tenantNames: $tenantNames) { tenant file } }";
const CANCEL_BACKFILLS: &str =
    "mutation($tenantNames: [String!]) { cancelBackfills(tenantNames: $tenantNames) { tenant file } }";
const QUARANTINE: &str = "query { quarantine { tenant versionId file line column cause message failures requestId \
                          quarantined } }";
const RETRY: &str = concat!("mutation($input: RetryInput!) { retryQuarantined(input: $input) { ", results!(), " } }");
const RELEASE: &str = "mutation($tenantNames: [String!]!) { releaseQuarantined(tenantNames: $tenantNames) }";
const AUDIT: &str = "query($since: String) { audit(since: $since) { id at actor action target requestId outcome prev \
                     hash signature traceId } }";

/// A refusal or failure the service answered, or why it could not be asked.
struct Failure {
    code: String,
    message: String,
}

impl Failure {
    fn local(code: &str, message: impl Into<String>) -> Failure {
        Failure { code: code.to_string(), message: message.into() }
    }

    /// The exit status the code means (as the in-process commands').
    fn exit(&self) -> Exit {
        Exit::of_code(&self.code)
    }

    fn report(&self, json: bool) -> Exit {
        if json {
            print_json(&json!({ "errors": [{ "message": self.message, "extensions": { "code": self.code } }] }));
        }
        eprintln!("strata: {} ({})", self.message, self.code);
        self.exit()
    }
}

/// A running service and the token to show it.
struct Remote {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    /// The endpoint as messages name it (no user info, no query).
    shown: String,
    token: Option<String>,
}

/// How long a query may take to answer, and a mutation (a version over a
/// large fleet answers when it is done).
const QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
const MUTATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(4 * 3600);
/// Most bytes of one answer (a page of 5,000 tenants is well under 1 MB).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

impl Remote {
    /// The service at `server`, its base URL (`http(s)://host:port[/path]`:
    /// no user info, query or fragment: the token goes in `STRATA_TOKEN`).
    fn new(server: &str) -> Result<Remote, String> {
        let base =
            reqwest::Url::parse(server).map_err(|e| format!("--server {:?} is not a URL: {e}", shown(server)))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(format!("--server {:?} is not an http:// or https:// URL", shown(server)));
        }
        if !base.username().is_empty()
            || base.password().is_some()
            || base.query().is_some()
            || base.fragment().is_some()
        {
            return Err(
                "--server takes the service's base URL (scheme, host, port, path): no user, password or query \
                        in it; the token goes in STRATA_TOKEN"
                    .to_string(),
            );
        }
        let endpoint = format!("{}/v2/service", base.as_str().trim_end_matches('/'));
        let endpoint = reqwest::Url::parse(&endpoint).map_err(|e| format!("--server: {e}"))?;
        Ok(Remote {
            // The service closes a keep-alive connection idle for
            // headerReadTimeoutSeconds (at least 1 s): one idle for less is
            // reused, never one it may be closing. No redirect is followed:
            // a mutation would be sent again elsewhere, or turned into a GET.
            client: reqwest::Client::builder()
                .pool_idle_timeout(std::time::Duration::from_millis(900))
                .connect_timeout(std::time::Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            shown: endpoint.to_string(),
            endpoint,
            token: std::env::var("STRATA_TOKEN").ok().filter(|t| !t.trim().is_empty()),
        })
    }

    /// Runs `document` and reads `data.<field>` into `T`.
    async fn call<T: DeserializeOwned>(&self, document: &str, field: &str, variables: Value) -> Result<T, Failure> {
        let data = self.data(document, variables).await?;
        serde_json::from_value(data[field].clone())
            .map_err(|e| Failure::local("INTERNAL", format!("the service's answer to {field} cannot be read: {e}")))
    }

    async fn data(&self, document: &str, variables: Value) -> Result<Value, Failure> {
        let mutation = document.trim_start().starts_with("mutation");
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .timeout(if mutation { MUTATION_TIMEOUT } else { QUERY_TIMEOUT })
            .header("Content-Type", "application/json")
            .body(json!({ "query": document, "variables": variables }).to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| {
            Failure::local("UNREACHABLE", format!("{} cannot be reached: {}", self.shown, e.without_url()))
        })?;
        let status = response.status();
        if status.is_redirection() {
            return Err(Failure::local(
                "UNREACHABLE",
                format!(
                    "{} answered HTTP {status}, a redirect, which is not followed: give --server where it points",
                    self.shown
                ),
            ));
        }
        let body = self.body(response).await?;
        let answer: Value = match serde_json::from_slice(&body) {
            Ok(answer) => answer,
            Err(_) if status == reqwest::StatusCode::UNAUTHORIZED => {
                return Err(Failure::local("UNAUTHENTICATED", format!("{} answered HTTP 401", self.shown)));
            }
            Err(e) => {
                return Err(Failure::local(
                    "INTERNAL",
                    format!("{} did not answer with JSON (HTTP {status}): {e}", self.shown),
                ));
            }
        };
        if let Some(error) = answer.get("error") {
            return Err(failure_of(error, error.get("code")));
        }
        if let Some(error) = answer.get("errors").and_then(|e| e.get(0)) {
            return Err(failure_of(error, error.pointer("/extensions/code")));
        }
        if status.is_server_error() {
            return Err(Failure::local("INTERNAL", format!("{} answered HTTP {status}", self.shown)));
        }
        Ok(answer.get("data").cloned().unwrap_or(Value::Null))
    }

    /// The answer's body, at most [`MAX_ANSWER_BYTES`].
    async fn body(&self, mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() > MAX_ANSWER_BYTES => {
                    return Err(Failure::local(
                        "INTERNAL",
                        format!("{} answered more than {MAX_ANSWER_BYTES} bytes", self.shown),
                    ));
                }
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => return Ok(body),
                Err(e) => {
                    return Err(Failure::local(
                        "UNREACHABLE",
                        format!("{}: the answer did not arrive: {}", self.shown, e.without_url()),
                    ));
                }
            }
        }
    }
}

/// A URL as messages show it: without user info, query or fragment.
fn shown(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let Some((scheme, rest)) = url.split_once("://") else { return printable(url) };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let host = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    printable(&format!("{scheme}://{host}"))
}

fn failure_of(error: &Value, code: Option<&Value>) -> Failure {
    Failure {
        code: printable(code.and_then(Value::as_str).unwrap_or("FAILED")),
        message: printable(error.get("message").and_then(Value::as_str).unwrap_or("the service refused")),
    }
}

/// Runs `command` against the service at `server`.
pub(super) fn run(server: &str, command: OnDatabase) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("strata: cannot start: {error}");
            return Exit::Failed;
        }
    };
    let remote = match Remote::new(server) {
        Ok(remote) => remote,
        Err(message) => {
            eprintln!("strata: {message}");
            return Exit::Usage;
        }
    };
    runtime.block_on(async move {
        match command {
            OnDatabase::Apply(args) => apply(&remote, *args).await,
            OnDatabase::Plan(args) => plan(&remote, args).await,
            OnDatabase::Status(args) => status(&remote, args).await,
            OnDatabase::Revert(args) => revert(&remote, args).await,
            OnDatabase::Repair(args) => repair(&remote, args).await,
            OnDatabase::Tenants(args) => tenants(&remote, args).await,
            OnDatabase::Drift(args) => drift(&remote, args).await,
            OnDatabase::Diff(args) => diff(&remote, args).await,
            OnDatabase::Lint(args) => lint(&remote, args).await,
            OnDatabase::Rollout(args) => rollout(&remote, args).await,
            OnDatabase::Quarantine(args) => quarantine(&remote, args).await,
            OnDatabase::Backfill(args) => backfill(&remote, args).await,
            OnDatabase::Audit(args) => audit(&remote, args).await,
            _ => {
                eprintln!(
                    "strata: with --server, plan, apply, status, revert, repair, tenants, drift, diff, lint, \
                     rollout, quarantine, backfill and audit run through the API; run the others without --server \
                     (with the configuration)"
                );
                Exit::Usage
            }
        }
    })
}

async fn apply(remote: &Remote, args: ApplyArgs) -> Exit {
    if args.failure_budget.is_some() {
        let refusal = Failure::local(
            "USAGE",
            "--failure-budget is not a field of the API: set failureBudget in the \
                                              service's configuration, or run without --server",
        );
        return refusal.report(args.json);
    }
    let action = Some(if args.sync { ActionDto::Sync } else { ActionDto::Apply });
    let input = VersionInput {
        version_name: args.version_name.clone(),
        action,
        dry_run: Some(args.dry_run),
        override_rollout: Some(args.override_rollout),
        sync_to: args.sync_to.clone(),
    };
    if let Some(desired) = &args.desired {
        return apply_desired(remote, &args, input, desired.as_deref()).await;
    }
    let (document, field, variables) = if let Some(tenant) = args.tenant {
        let input = TenantInput {
            tenant_name: tenant,
            version_name: args.version_name,
            action,
            dry_run: Some(args.dry_run),
            shard: args.shard,
            colocate_with: args.colocate_with,
        };
        (CREATE_TENANT, "createTenant", json!({ "input": input }))
    } else if args.tenants.is_some() || args.share.is_some() || args.attribute.is_some() {
        let attribute = args.attribute.map(|wave| wave.to_string());
        let variables =
            json!({ "input": input, "tenantNames": args.tenants, "share": args.share, "attribute": attribute });
        (CREATE_WAVE, "createVersionWave", variables)
    } else {
        (CREATE_VERSION, "createVersion", json!({ "input": input }))
    };
    let done = if args.sync { "recorded" } else { "applied" };
    created(remote.call(document, field, variables).await, done, args.dry_run, args.json)
}

/// `apply --desired [FILE] [--dir DIR] --server`: `applyDesiredSchema`, the
/// file read here and sent as text (without FILE, the service's
/// `desiredSchema`);
/// each group's version printed as `apply` prints one, the groups left
/// named. Exit 11 when a group's version quarantined tenants.
async fn apply_desired(remote: &Remote, args: &ApplyArgs, input: VersionInput, file: Option<&std::path::Path>) -> Exit {
    let desired = match read_desired(file) {
        Ok(desired) => desired,
        Err(failure) => return failure.report(args.json),
    };
    let destructive = DestructiveDto::from(args.destructive());
    let variables = json!({
        "input": input, "desired": desired, "destructive": destructive, "group": args.group, "directory": args.dir
    });
    let answer = match remote.call::<DesiredApplyDto>(APPLY_DESIRED, "applyDesiredSchema", variables).await {
        Ok(answer) => answer,
        Err(failure) => return failure.report(args.json),
    };
    let quarantined = answer.versions.iter().any(|version| !version.quarantined.is_empty());
    if args.json {
        print_json(&answer);
    } else {
        for group in &answer.left {
            eprintln!("strata: left as they are: {}: {}", group.reason, group.tenants.join(", "));
        }
        if answer.versions.is_empty() {
            eprintln!("strata: no group of tenants to bring to the desired schema");
        }
        for version in &answer.versions {
            print_results(version, "applied", args.dry_run);
        }
    }
    if quarantined { Exit::Quarantined } else { Exit::Success }
}

/// `diff --server [--desired FILE]`: `desiredDiff`, the file read here and
/// sent as text (without FILE, the service's `desiredSchema`), read back
/// into core's report and printed as in-process; exit 10 with `--check`
/// when a tenant differs.
async fn diff(remote: &Remote, args: DiffArgs) -> Exit {
    let desired = match read_desired(args.desired.flatten().as_deref()) {
        Ok(desired) => desired,
        Err(failure) => return failure.report(args.json),
    };
    let variables = json!({ "desired": desired, "directory": args.dir });
    match remote.call::<DesiredDiffDto>(DESIRED_DIFF, "desiredDiff", variables).await {
        Ok(answer) => {
            let report = strata_core::migrate::desired::DesiredReport::from(answer);
            if args.json {
                print_json(&report);
            } else {
                // Without the service's configuration at hand: a directory
                // named is a single schema's (the tenants' need none).
                let noun = if args.dir.is_some() { "schema" } else { "tenant" };
                out!("{}", strata_core::migrate::desired::render_text_of(&report, noun));
            }
            if args.check && report.has_differences() { Exit::SchemaDrift } else { Exit::Success }
        }
        Err(failure) => failure.report(args.json),
    }
}

/// The desired schema a command sends: the text of `--desired FILE`, read
/// here, or none (the service's `desiredSchema`).
fn read_desired(file: Option<&std::path::Path>) -> Result<Option<String>, Failure> {
    let Some(file) = file else { return Ok(None) };
    std::fs::read_to_string(file)
        .map(Some)
        .map_err(|error| Failure::local("USAGE", format!("{}: {error}", file.display())))
}

/// `revert --server`: `revertVersion`, printed as `apply` prints a version.
async fn revert(remote: &Remote, args: RevertArgs) -> Exit {
    if args.share.is_some() || args.attribute.is_some() {
        return Failure::local(
            "USAGE",
            "with --server, revert takes --tenants (revertVersion's tenantNames), not \
                                        --share or --where",
        )
        .report(args.json);
    }
    if args.extent.steps.is_none() && args.extent.to.is_none() {
        return Failure::local("USAGE", "revert needs --steps N or --to FILE").report(args.json);
    }
    let input = VersionInput {
        version_name: args.version_name,
        action: None,
        dry_run: Some(args.dry_run),
        override_rollout: Some(args.override_rollout),
        sync_to: None,
    };
    let variables =
        json!({ "input": input, "steps": args.extent.steps, "to": args.extent.to, "tenantNames": args.tenants });
    created(remote.call(REVERT, "revertVersion", variables).await, "reverted", args.dry_run, args.json)
}

/// A version's answer printed (or its refusal reported), as in-process:
/// exit 11 when tenants were quarantined.
fn created(answer: Result<CreateResultsDto, Failure>, done: &str, dry_run: bool, json: bool) -> Exit {
    match answer {
        Ok(results) => {
            let exit = if results.quarantined.is_empty() { Exit::Success } else { Exit::Quarantined };
            if json {
                print_json(&results);
            } else {
                print_results(&results, done, dry_run);
            }
            exit
        }
        Err(failure) => failure.report(json),
    }
}

/// `drift --server`: the API's `drift`, read back into core's report and
/// printed as in-process (the same JSON, the same text); exit 10 on drift.
async fn drift(remote: &Remote, args: DriftArgs) -> Exit {
    match remote.call::<SchemaDriftDto>(DRIFT, "drift", json!({})).await {
        Ok(answer) => {
            let report = strata_core::migrate::fingerprint::DriftReport::from(answer);
            if args.json {
                print_json(&report);
            } else {
                out!("{}", strata_core::migrate::fingerprint::render_text(&report));
            }
            if report.has_drift() { Exit::SchemaDrift } else { Exit::Success }
        }
        Err(failure) => failure.report(args.json),
    }
}

/// `lint --server`: the findings of the files `apply` would run, from the
/// API's `plan`, printed as in-process. `--all` reads files, not the fleet:
/// it runs where they are, without `--server`.
async fn lint(remote: &Remote, args: LintArgs) -> Exit {
    if args.all {
        return Failure::local("USAGE", "lint --all reads the source files, not the fleet: run it without --server")
            .report(args.json);
    }
    match remote.call::<PlanPreviewDto>(PLAN, "plan", json!({ "action": ActionDto::Apply })).await {
        Ok(preview) => super::commands::print_lint(&preview.lint_report(), &args),
        Err(failure) => failure.report(args.json),
    }
}

/// What `tenants --server` reads besides the pages of tenants.
#[derive(serde::Deserialize)]
struct ShardsData {
    shards: Vec<ShardRow>,
    quarantine: Vec<QuarantinedRow>,
}

#[derive(serde::Deserialize)]
struct TenantRow {
    name: String,
    shard: Option<String>,
}

#[derive(serde::Deserialize)]
struct ShardRow {
    name: String,
    reachable: bool,
}

#[derive(serde::Deserialize)]
struct QuarantinedRow {
    tenant: String,
}

/// Every tenant, a page at a time (in order of name), then the shards and
/// the quarantine.
async fn read_tenants(remote: &Remote) -> Result<(Vec<TenantRow>, ShardsData), Failure> {
    let mut tenants: Vec<TenantRow> = Vec::new();
    loop {
        let after = tenants.last().map(|tenant| tenant.name.clone());
        let variables = json!({ "first": TENANTS_PER_PAGE, "after": after });
        let page: Vec<TenantRow> = remote.call(TENANTS, "tenants", variables).await?;
        // Pages come in order of name, each after the last: a page that does
        // not move on would be asked for again for ever.
        if let (Some(after), Some(first)) = (&after, page.first())
            && first.name <= *after
        {
            return Err(Failure::local(
                "INTERNAL",
                format!("the service answered a page of tenants that does not follow {after:?}"),
            ));
        }
        let full = page.len() == TENANTS_PER_PAGE;
        tenants.extend(page);
        if !full {
            break;
        }
    }
    let data = remote.data(SHARDS, json!({})).await?;
    let data = serde_json::from_value(data)
        .map_err(|error| Failure::local("INTERNAL", format!("the answer cannot be read: {error}")))?;
    Ok((tenants, data))
}

/// `tenants [--shard S] --server`, listed as in-process (without the Citus
/// nodes the API does not serve), and `tenants add --server`:
/// `createTenants`, the service checking the list whole.
async fn tenants(remote: &Remote, args: TenantsArgs) -> Exit {
    match args.action {
        Some(TenantsAction::Add(add)) => {
            let names = match super::tenants::read_entries(&add) {
                Ok((_, entries)) => entries.into_iter().map(|entry| entry.name).collect(),
                Err(exit) => return exit,
            };
            let input = TenantsInput {
                tenant_names: names,
                version_name: add.version_name,
                action: Some(if add.sync { ActionDto::Sync } else { ActionDto::Apply }),
                shard: add.shard,
            };
            let answer = remote.call(CREATE_TENANTS, "createTenants", json!({ "input": input })).await;
            created(answer, if add.sync { "recorded" } else { "applied" }, false, args.json)
        }
        Some(TenantsAction::Move { .. }) => {
            Failure::local("USAGE", "tenants move runs without --server (the API does not move tenants)")
                .report(args.json)
        }
        None => {
            let (tenants, data) = match read_tenants(remote).await {
                Ok(read) => read,
                Err(failure) => return failure.report(args.json),
            };
            if let Some(wanted) = &args.shard
                && !data.shards.iter().any(|shard| &shard.name == wanted)
            {
                let known: Vec<&str> = data.shards.iter().map(|shard| shard.name.as_str()).collect();
                return super::tenants::unknown_shard(wanted, &known);
            }
            let quarantined = data.quarantine.into_iter().map(|row| row.tenant).collect();
            let (shards, unsharded) = if data.shards.is_empty() {
                (Vec::new(), Some(tenants.into_iter().map(|tenant| tenant.name).collect()))
            } else {
                let shards = data
                    .shards
                    .into_iter()
                    .map(|shard| crate::db::ShardTenants {
                        tenants: tenants
                            .iter()
                            .filter(|tenant| tenant.shard.as_deref() == Some(shard.name.as_str()))
                            .map(|tenant| tenant.name.clone())
                            .collect(),
                        name: shard.name,
                        reachable: shard.reachable,
                    })
                    .collect();
                (shards, None)
            };
            let listing = super::tenants::listing(shards, unsharded, &quarantined, args.shard.as_deref());
            super::tenants::print_listing(&listing, args.json)
        }
    }
}

fn print_results(results: &CreateResultsDto, done: &str, dry_run: bool) {
    let s = &results.summary;
    let counts = format!(
        "{} migration(s) and {} script(s) over {} tenant(s)",
        s.migrations_grand_total, s.scripts_grand_total, s.tenants
    );
    match &results.version {
        None if dry_run => outln!("Dry run: {counts} would be {done} ({:.2} s); rolled back.", s.duration),
        None => outln!("Nothing to do: no version created."),
        Some(version) => {
            outln!("Version {} \"{}\" created: {counts} {done} in {:.2} s.", version.id, version.name, s.duration)
        }
    }
    if !results.quarantined.is_empty() {
        outln!("\n{} tenant(s) failed and are quarantined (later versions skip them):", results.quarantined.len());
        print_quarantined(&results.quarantined);
    }
    if !results.skipped_tenants.is_empty() {
        outln!(
            "\nSkipped {} quarantined tenant(s): {}",
            results.skipped_tenants.len(),
            results.skipped_tenants.join(", ")
        );
    }
    if !results.released_tenants.is_empty() {
        outln!("\nReleased from quarantine: {}", results.released_tenants.join(", "));
    }
}

fn print_quarantined(rows: &[QuarantinedTenantDto]) {
    for row in rows {
        let at = row.line.map(|line| format!(":{line}")).unwrap_or_default();
        outln!("  {}  {}{at}  {} ({} failure(s)): {}", row.tenant, row.file, row.cause, row.failures, row.message);
    }
}

/// The first five names, and how many more.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let more = names.len().saturating_sub(5);
    let more = if more > 0 { format!(", and {more} more") } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

fn print_plan(plan: &PlanPreviewDto) {
    if plan.refused_by_drift {
        outln!("Apply would REFUSE: files changed since they were applied:");
        for drift in &plan.drift {
            outln!("  {} ({} schema(s))", drift.file, drift.schemas.len());
        }
        return;
    }
    if plan.nothing_to_do {
        outln!("Nothing to apply.");
    }
    for group in &plan.groups {
        let files: Vec<String> = group
            .files
            .iter()
            .map(|f| if f.script { format!("{} (script)", f.file) } else { f.file.clone() })
            .collect();
        outln!("{} {}: {}", if group.tenants { "tenants" } else { "schema" }, listed(&group.schemas), files.join(", "));
    }
    for read in &plan.histories {
        outln!("recorded as {} says, in {}", read.history, listed(&read.schemas));
    }
    if !plan.without_history.is_empty() {
        outln!("no history in {}: nothing recorded there", listed(&plan.without_history));
    }
    for finding in &plan.findings {
        outln!(
            "{}:{}:{}: {} {}: {}",
            finding.file,
            finding.line,
            finding.column,
            finding.severity,
            finding.rule,
            finding.message
        );
    }
    out!("{}", render_active_rollouts(&plan.active_rollouts));
}

/// `plan --server`: the API's `plan`; `--json` prints what the in-process
/// command prints.
async fn plan(remote: &Remote, args: PlanArgs) -> Exit {
    if args.tenant.is_some() || args.revert || args.extent.steps.is_some() || args.extent.to.is_some() {
        return Failure::local("USAGE", "with --server, plan previews createVersion (Apply or --sync) only")
            .report(args.json);
    }
    let action = if args.sync { ActionDto::Sync } else { ActionDto::Apply };
    match remote.call::<PlanPreviewDto>(PLAN, "plan", json!({ "action": action })).await {
        Ok(preview) => {
            let failing = preview
                .findings
                .iter()
                .any(|f| f.severity.parse::<strata_core::migrate::lint::Severity>().is_ok_and(|s| s >= args.fail_on));
            let exit = match () {
                () if preview.refused_by_drift => Exit::Drift,
                () if args.check && !preview.drift.is_empty() => Exit::Drift,
                () if args.check && failing => Exit::LintFindings,
                () if args.check && preview.pending => Exit::Pending,
                () => Exit::Success,
            };
            match (args.json, preview.refused_by_drift) {
                (true, true) => print_json(&refused_by_drift(&preview.drift)),
                (true, false) => print_json(&PlanAnswer::from(preview)),
                (false, _) => print_plan(&preview),
            }
            exit
        }
        Err(failure) => failure.report(args.json),
    }
}

/// `status --server`: the API's `status`, printed as in-process.
async fn status(remote: &Remote, args: StatusArgs) -> Exit {
    let versions = u32::try_from(args.versions).unwrap_or(u32::MAX);
    match remote.call::<StatusDto>(STATUS, "status", json!({ "versions": versions })).await {
        Ok(status) => print_status(&status, args.json),
        Err(failure) => failure.report(args.json),
    }
}

/// `repair --server`: the API's `repair`, listed first (a dry run), then
/// done, printed as in-process.
async fn repair(remote: &Remote, args: RepairArgs) -> Exit {
    let variables = |dry_run: bool| json!({ "files": args.files, "versionName": args.version_name, "dryRun": dry_run });
    // A refusal of the listing is left to the repair itself, which puts it
    // on record.
    if !args.dry_run
        && !args.json
        && let Ok(planned) = remote.call::<RepairDto>(REPAIR, "repair", variables(true)).await
    {
        let planned = strata_core::migrate::repair::Repair::from(planned);
        if !planned.is_empty() {
            out!("{}", strata_core::migrate::repair::render(&planned, false));
        }
    }
    match remote.call::<RepairDto>(REPAIR, "repair", variables(args.dry_run)).await {
        Ok(done) => {
            let done = strata_core::migrate::repair::Repair::from(done);
            super::commands::print_repair(&done, args.dry_run, args.json);
            Exit::Success
        }
        Err(failure) => failure.report(args.json),
    }
}

fn print_rollout(rollout: &RolloutDto) {
    outln!("rollout {}: {} — {}", rollout.id, rollout.version_name, rollout.status);
    for (index, wave) in rollout.waves.iter().enumerate() {
        // A wave to a desired schema: its plan, not its (many) tenants.
        let shown = match &wave.plan {
            Some(plan) => {
                let tenants = wave.wave.split(':').next().unwrap_or_default().split(',').count();
                format!("plan {} ({tenants} tenant(s))", &plan[..12.min(plan.len())])
            }
            None => wave.wave.clone(),
        };
        outln!("  {}. {shown:<24} {}", index + 1, wave.state.to_lowercase());
    }
    if let Some(event) = rollout.events.last() {
        let wave = event.wave.map(|w| format!(" (wave {w})")).unwrap_or_default();
        let by = event.actor.as_deref().unwrap_or(&event.request_id);
        let detail = if event.detail.is_empty() { String::new() } else { format!(": {}", event.detail) };
        outln!("  last: {}{wave} by {by}{detail}", event.action);
    }
}

async fn rollout(remote: &Remote, args: RolloutArgs) -> Exit {
    let one = |result: Result<RolloutDto, Failure>| match result {
        Ok(rollout) => {
            if args.json {
                print_json(&rollout);
            } else {
                print_rollout(&rollout);
            }
            Exit::Success
        }
        Err(failure) => failure.report(args.json),
    };
    let operate = |document: &'static str, field: &'static str, id: i64| async move {
        let id = i32::try_from(id).unwrap_or(i32::MAX);
        remote.call::<RolloutDto>(document, field, json!({ "id": id })).await
    };
    match args.action.unwrap_or(RolloutAction::List) {
        RolloutAction::List => match remote.call::<Vec<RolloutDto>>(ROLLOUTS, "rollouts", json!({})).await {
            Ok(rollouts) => {
                if args.json {
                    print_json(&rollouts);
                } else if rollouts.is_empty() {
                    outln!("No rollout.");
                } else {
                    rollouts.iter().for_each(print_rollout);
                }
                Exit::Success
            }
            Err(failure) => failure.report(args.json),
        },
        RolloutAction::Start { version_name, waves, failure_budget, desired, allow_destructive, skip_destructive } => {
            let text = match desired.as_ref().map(|file| read_desired(file.as_deref())).transpose() {
                Ok(text) => text.flatten(),
                Err(failure) => return failure.report(args.json),
            };
            let destructive = desired
                .is_some()
                .then(|| DestructiveDto::from(super::destructive(allow_destructive, skip_destructive)));
            let variables = json!({
                "versionName": version_name, "waves": waves, "failureBudget": failure_budget,
                "desired": text, "desiredSchema": desired.is_some(), "destructive": destructive,
            });
            one(remote.call(START_ROLLOUT, "startRollout", variables).await)
        }
        RolloutAction::Approve { id } => one(operate(APPROVE, "approveRollout", id).await),
        RolloutAction::Pause { id } => one(operate(PAUSE, "pauseRollout", id).await),
        RolloutAction::Resume { id } => one(operate(RESUME, "resumeRollout", id).await),
        RolloutAction::Cancel { id } => one(operate(CANCEL, "cancelRollout", id).await),
        RolloutAction::Drive => {
            Failure::local("USAGE", "a server drives its rollouts itself; drive runs without --server")
                .report(args.json)
        }
    }
}

/// `backfill [list|pause|resume|cancel]` through the API.
async fn backfill(remote: &Remote, args: BackfillArgs) -> Exit {
    let (document, tenants, how) = match args.action.unwrap_or(BackfillAction::List { summary: false }) {
        BackfillAction::List { summary: true } => {
            let shown = json!({ "shown": super::backfill::SUMMARY_SHOWN });
            return match remote.call::<Vec<BackfillFileDto>>(BACKFILL_FILES, "backfillFiles", shown).await {
                Ok(files) => super::backfill::print_files(&files, args.json),
                Err(failure) => failure.report(args.json),
            };
        }
        BackfillAction::List { summary: false } => {
            return match remote.call::<Vec<BackfillDto>>(BACKFILLS, "backfills", json!({})).await {
                Ok(rows) => super::backfill::print(&rows, args.json),
                Err(failure) => failure.report(args.json),
            };
        }
        BackfillAction::Pause { tenants } => (PAUSE_BACKFILLS, tenants, BackfillMove::Pause),
        BackfillAction::Resume { tenants } => (RESUME_BACKFILLS, tenants, BackfillMove::Resume),
        BackfillAction::Cancel { tenants } => (CANCEL_BACKFILLS, tenants, BackfillMove::Cancel),
    };
    let tenants = Some(tenants).filter(|t| !t.is_empty());
    match remote.call::<Vec<BackfillWaitDto>>(document, how.action(), json!({ "tenantNames": tenants })).await {
        Ok(moved) => super::backfill::print_moved(&moved, how, args.json),
        Err(failure) => failure.report(args.json),
    }
}

async fn quarantine(remote: &Remote, args: QuarantineArgs) -> Exit {
    match args.action.unwrap_or(QuarantineAction::List) {
        QuarantineAction::List => {
            match remote.call::<Vec<QuarantinedTenantDto>>(QUARANTINE, "quarantine", json!({})).await {
                Ok(rows) => {
                    if args.json {
                        print_json(&rows);
                    } else if rows.is_empty() {
                        outln!("No tenant is quarantined.");
                    } else {
                        outln!("{} tenant(s) quarantined:", rows.len());
                        print_quarantined(&rows);
                    }
                    Exit::Success
                }
                Err(failure) => failure.report(args.json),
            }
        }
        // The service runs the backfills a retry restarts.
        QuarantineAction::Retry { version_name, tenants, no_wait: _, override_rollout } => {
            let input = RetryInput {
                version_name,
                tenant_names: Some(tenants).filter(|t| !t.is_empty()),
                override_rollout: Some(override_rollout).filter(|o| *o),
            };
            created(
                remote.call(RETRY, "retryQuarantined", json!({ "input": input })).await,
                "applied",
                false,
                args.json,
            )
        }
        QuarantineAction::Release { tenants } => {
            match remote.call::<Vec<String>>(RELEASE, "releaseQuarantined", json!({ "tenantNames": tenants })).await {
                Ok(released) => print_released(&released, args.json),
                Err(failure) => failure.report(args.json),
            }
        }
    }
}

/// `strata --server … audit [verify|head]`: the log as the API serves it
/// (admin), verified here with the public keys given: a verifier needs
/// neither the database nor the signing key.
async fn audit(remote: &Remote, args: AuditArgs) -> Exit {
    // `--since` selects the rows listed; verify and head read them all.
    let since = if args.action.is_none() { args.since.clone() } else { None };
    let rows = match remote.call::<Vec<AuditRowDto>>(AUDIT, "audit", json!({ "since": since })).await {
        Ok(rows) => rows,
        Err(failure) => return failure.report(args.json),
    };
    let Some(action) = args.action else { return super::access::print_audit(&rows, args.json) };
    let rows: Vec<Sealed> = rows.into_iter().map(Into::into).collect();
    match action {
        AuditAction::Head => super::access::print_head(audit::head(&rows), args.json),
        AuditAction::Verify { public_keys, expect, signed_from } => {
            let known = audit::Known { head: expect.as_deref(), signed_from };
            let found = audit::verify_knowing(&rows, &public_keys, known);
            super::access::print_verified(found, expect.is_some(), args.json)
        }
        AuditAction::Keygen => super::access::keygen(args.json),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on 127.0.0.1 that answers every request with `answer`
    /// (raw HTTP), or never when it is `None`.
    async fn fake(answer: Option<&'static str>) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else { return };
                tokio::spawn(async move {
                    let mut buffer = [0u8; 8192];
                    let _ = stream.read(&mut buffer).await;
                    match answer {
                        Some(answer) => {
                            let _ = stream.write_all(answer.as_bytes()).await;
                        }
                        None => tokio::time::sleep(std::time::Duration::from_secs(3600)).await,
                    }
                });
            }
        });
        url
    }

    #[test]
    fn a_server_url_holds_no_credentials_and_messages_never_show_them() {
        assert!(Remote::new("http://127.0.0.1:8080").is_ok());
        assert!(Remote::new("https://strata.example.com/base/").is_ok());
        for refused in ["http://user:s3cr3t@h:1/", "http://h:1/?token=abc", "not a url", "ftp://h/"] {
            let message = Remote::new(refused).err().unwrap_or_default();
            assert!(
                !message.is_empty() && !message.contains("s3cr3t") && !message.contains("abc"),
                "{refused}: {message}"
            );
        }
        assert_eq!(shown("http://u:p@h:1/x?token=t"), "http://h:1/x");
        assert_eq!(shown("http://u:p@h:1"), "http://h:1");
        assert_eq!(printable("a\u{1b}[2J\r\nstrata: applied"), "a [2J  strata: applied");
    }

    #[tokio::test]
    async fn a_redirect_an_endless_answer_or_a_repeated_page_ends_with_a_clear_failure() {
        let redirect = fake(Some(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.2:9/x\r\nContent-Length: 0\r\n\r\n",
        ))
        .await;
        let failed = Remote::new(&redirect).unwrap().data("{ versionCount }", json!({})).await.unwrap_err();
        assert!(failed.message.contains("a redirect, which is not followed"), "{}", failed.message);
        let html = fake(Some("HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\n<b/>")).await;
        let failed = Remote::new(&html).unwrap().data("{ versionCount }", json!({})).await.unwrap_err();
        assert_eq!((failed.code.as_str(), failed.exit()), ("UNAUTHENTICATED", Exit::Refused));
        let broken = fake(Some(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"data\": {\"versionCount\": 1}}",
        ))
        .await;
        let failed = Remote::new(&broken).unwrap().data("{ versionCount }", json!({})).await.unwrap_err();
        assert!(failed.message.contains("HTTP 500"), "{}", failed.message);
        // A server that answers the same full page however far the client got.
        let names: Vec<Value> =
            (0..TENANTS_PER_PAGE).map(|i| json!({ "name": format!("t{i:05}"), "shard": null })).collect();
        let body = json!({ "data": { "tenants": names } }).to_string();
        let page = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let repeating = fake(Some(Box::leak(page.into_boxed_str()))).await;
        let remote = Remote::new(&repeating).unwrap();
        let failed = read_tenants(&remote).await.err().expect("a repeated page ends the listing");
        assert!(failed.message.contains("does not follow \"t04999\""), "{}", failed.message);
        let silent = fake(None).await;
        let remote = Remote::new(&silent).unwrap();
        let quick = tokio::time::timeout(std::time::Duration::from_secs(2), remote.data("{ versionCount }", json!({})));
        assert!(quick.await.is_err(), "a query waits up to its own time-out, not for ever: QUERY_TIMEOUT");
        assert_eq!(QUERY_TIMEOUT, std::time::Duration::from_secs(300));
    }

    /// Each document the client sends, with variables as the commands
    /// serialize the API's input types.
    fn documents() -> Vec<(&'static str, Value)> {
        let input = VersionInput {
            version_name: "v".into(),
            action: Some(ActionDto::Sync),
            dry_run: Some(true),
            override_rollout: Some(false),
            sync_to: Some("ref/001.sql".into()),
        };
        let version = json!({ "input": input });
        let tenant = TenantInput {
            tenant_name: "t".into(),
            version_name: "v".into(),
            action: Some(ActionDto::Apply),
            dry_run: Some(false),
            shard: None,
            colocate_with: None,
        };
        let retry = RetryInput { version_name: "v".into(), tenant_names: None, override_rollout: Some(true) };
        let id = json!({ "id": 1 });
        vec![
            (CREATE_VERSION, version.clone()),
            (CREATE_WAVE, json!({ "input": input, "tenantNames": ["t"], "share": null, "attribute": null })),
            (CREATE_TENANT, json!({ "input": tenant })),
            (
                APPLY_DESIRED,
                json!({ "input": input, "desired": "create table {schema}.t (id int);", "destructive": "Skip" }),
            ),
            (
                CREATE_TENANTS,
                json!({ "input": TenantsInput {
                    tenant_names: vec!["t".into()],
                    version_name: "v".into(),
                    action: Some(ActionDto::Sync),
                    shard: None,
                } }),
            ),
            (REVERT, json!({ "input": input, "steps": 1, "to": null, "tenantNames": ["t"] })),
            (TENANTS, json!({ "first": 2, "after": "t" })),
            (SHARDS, json!({})),
            (DRIFT, json!({})),
            (DESIRED_DIFF, json!({ "desired": "create table {schema}.t (id int);" })),
            (PLAN, json!({ "action": "Sync" })),
            (STATUS, json!({ "versions": 10 })),
            (REPAIR, json!({ "files": null, "versionName": "v", "dryRun": true })),
            (ROLLOUTS, json!({})),
            (START_ROLLOUT, json!({ "versionName": "v", "waves": ["rest"] })),
            (APPROVE, id.clone()),
            (PAUSE, id.clone()),
            (RESUME, id.clone()),
            (CANCEL, id),
            (QUARANTINE, json!({})),
            (BACKFILLS, json!({})),
            (BACKFILL_FILES, json!({ "shown": 20 })),
            (PAUSE_BACKFILLS, json!({ "tenantNames": ["t"] })),
            (RESUME_BACKFILLS, json!({ "tenantNames": null })),
            (RETRY, json!({ "input": retry })),
            (RELEASE, json!({ "tenantNames": ["t"] })),
        ]
    }

    /// Every document the client sends is valid against the schema the
    /// service serves: executed on it without a service, each fails only in
    /// its resolvers (errors with a path), never in validation.
    #[tokio::test]
    async fn every_document_is_valid_against_the_schema() {
        let schema = async_graphql::Schema::build(
            crate::graphql::Query,
            crate::graphql::Mutation,
            async_graphql::EmptySubscription,
        )
        .register_output_type::<crate::graphql::types::MigrationInterface>()
        .finish();
        let documents = documents();
        let limits = strata_core::migrate::config::GraphQlLimits::default();
        use crate::graphql::limits::Fleet;
        for (document, variables) in documents {
            let request =
                async_graphql::Request::new(document).variables(async_graphql::Variables::from_json(variables));
            // Within the default limits, root fields and fields that read
            // the whole fleet included.
            let checked = crate::graphql::limits::check_request(&[&request], Fleet::Sharded, &limits);
            assert!(checked.is_ok(), "{document}: {checked:?}");
            let response = schema.execute(request).await;
            let invalid: Vec<String> =
                response.errors.iter().filter(|e| e.path.is_empty()).map(|e| e.message.clone()).collect();
            assert!(invalid.is_empty(), "{document}: {invalid:?}");
        }
    }
}
