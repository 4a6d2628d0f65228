//! `strata tenants`: each tenant with its shard and whether it is
//! quarantined; a shard that does not answer is shown as the directory
//! last saw it.

use std::collections::HashSet;

use serde::Serialize;

use crate::cli::output::{failure, print_json};
use crate::cli::{Exit, TenantsAction, TenantsArgs};
use crate::db::ShardTenants;
use crate::service::Service;

/// One tenant as listed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TenantLine {
    name: String,
    /// `None` on one database server.
    shard: Option<String>,
    /// The Citus worker node holding its schema's shards (`host:port`).
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<String>,
    /// Whether its shard answered (`false`: as the directory last saw it).
    reachable: bool,
    quarantined: bool,
}

/// One shard as listed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ShardLine {
    name: String,
    tenant_count: usize,
    reachable: bool,
}

/// What `strata tenants` prints, in-process and through `--server` alike.
#[derive(Debug, Serialize)]
pub(super) struct Listing {
    tenants: Vec<TenantLine>,
    shards: Vec<ShardLine>,
}

/// Lists the tenants; exit 12 when a shard did not answer (its tenants are
/// then the directory's last sight of them).
pub(super) async fn tenants(service: &Service, args: TenantsArgs) -> Exit {
    if let Some(TenantsAction::Move { tenant, to, mode }) = &args.action {
        return move_tenant(service, tenant, to, mode).await;
    }
    let shards = match service.shards().await {
        Ok(shards) => shards,
        Err(error) => return failure(&error),
    };
    if let Some(wanted) = &args.shard
        && !shards.iter().any(|shard| &shard.name == wanted)
    {
        let known: Vec<&str> = shards.iter().map(|shard| shard.name.as_str()).collect();
        return unknown_shard(wanted, &known);
    }
    let unsharded = if shards.is_empty() {
        match service.tenants().await {
            Ok(tenants) => Some(tenants),
            Err(error) => return failure(&error),
        }
    } else {
        None
    };
    let quarantined: HashSet<String> = match service.quarantined().await {
        Ok(rows) => rows.into_iter().map(|row| row.tenant).collect(),
        Err(error) => return failure(&error),
    };
    let nodes: std::collections::HashMap<String, String> = match service.placements().await {
        Ok(rows) => rows.into_iter().collect(),
        Err(error) => return failure(&error),
    };
    let mut listing = listing(shards, unsharded, &quarantined, args.shard.as_deref());
    for tenant in &mut listing.tenants {
        tenant.node = nodes.get(&tenant.name).cloned();
    }
    print_listing(&listing, args.json)
}

/// Prints `listing`; exit 12 when a shard did not answer.
pub(super) fn print_listing(listing: &Listing, json: bool) -> Exit {
    if json {
        print_json(listing);
    } else {
        print_text(listing);
    }
    if listing.shards.iter().any(|shard| !shard.reachable) { Exit::ShardsFailed } else { Exit::Success }
}

/// A shard named by `--shard` that the fleet does not have: refused
/// naming those it has (exit 2).
pub(super) fn unknown_shard(wanted: &str, known: &[&str]) -> Exit {
    eprintln!(
        "strata: no shard is named {wanted:?} (the configuration has: {})",
        if known.is_empty() { "none, one database server".to_string() } else { known.join(", ") }
    );
    Exit::Usage
}

/// `strata tenants move TENANT --to HOST:PORT`.
async fn move_tenant(service: &Service, tenant: &str, to: &str, mode: &str) -> Exit {
    let Some((host, port)) = to.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<i32>().ok()?))) else {
        eprintln!("strata: --to {to:?} is not HOST:PORT");
        return Exit::Usage;
    };
    match service.move_tenant(tenant, host, port, mode).await {
        Ok(()) => {
            outln!("Tenant {tenant} moved to {to}.");
            Exit::Success
        }
        Err(error) => failure(&error),
    }
}

/// The listing of `shards`' tenants (or, on one server, `unsharded`), only
/// `only`'s when given, each marked quarantined or not.
pub(super) fn listing(
    shards: Vec<ShardTenants>,
    unsharded: Option<Vec<String>>,
    quarantined: &HashSet<String>,
    only: Option<&str>,
) -> Listing {
    let line = |name: String, shard: Option<String>, reachable: bool| TenantLine {
        quarantined: quarantined.contains(&name),
        name,
        shard,
        node: None,
        reachable,
    };
    // In order of name, whichever way the tenants were read (through
    // `--server` they come in pages, in that order).
    if let Some(mut names) = unsharded {
        names.sort_unstable();
        return Listing { tenants: names.into_iter().map(|name| line(name, None, true)).collect(), shards: Vec::new() };
    }
    let mut listing = Listing { tenants: Vec::new(), shards: Vec::new() };
    for ShardTenants { name, mut tenants, reachable } in shards {
        if only.is_some_and(|only| only != name) {
            continue;
        }
        tenants.sort_unstable();
        listing.shards.push(ShardLine { name: name.clone(), tenant_count: tenants.len(), reachable });
        listing.tenants.extend(tenants.into_iter().map(|tenant| line(tenant, Some(name.clone()), reachable)));
    }
    listing
}

fn print_text(listing: &Listing) {
    let quarantined = listing.tenants.iter().filter(|tenant| tenant.quarantined).count();
    if listing.shards.is_empty() {
        outln!("{} tenant(s), {quarantined} quarantined.", listing.tenants.len());
    } else {
        let shards: Vec<String> = listing
            .shards
            .iter()
            .map(|shard| {
                let answer = if shard.reachable { "" } else { ", not answering: as last seen" };
                format!("{} {}{answer}", shard.name, shard.tenant_count)
            })
            .collect();
        outln!(
            "{} tenant(s), {quarantined} quarantined, on {} shard(s): {}.",
            listing.tenants.len(),
            listing.shards.len(),
            shards.join("; ")
        );
    }
    let width = listing.tenants.iter().map(|tenant| tenant.name.len()).max().unwrap_or(0);
    for tenant in &listing.tenants {
        let mut notes = Vec::new();
        if let Some(shard) = &tenant.shard {
            notes.push(format!("@{shard}"));
        }
        if let Some(node) = &tenant.node {
            notes.push(format!("on {node}"));
        }
        if !tenant.reachable {
            notes.push("unreachable".to_string());
        }
        if tenant.quarantined {
            notes.push("quarantined".to_string());
        }
        let line = format!("{:<width$}  {}", tenant.name, notes.join(" "));
        outln!("{}", line.trim_end());
    }
}

/// `tenants add`'s list: the names given, or the file's (`-`: standard
/// input), each with its place (a line of the file, else a position), and
/// checked for what needs no database — the engine's rule and names twice
/// — before anything connects.
pub(super) fn read_list(
    args: &super::TenantsAddArgs,
    config: &strata_core::migrate::config::Config,
) -> Result<Vec<String>, Exit> {
    use strata_core::migrate::tenant_list;
    let (shown, entries) = read_entries(args)?;
    let singles: Vec<&str> = config.single_schemas().collect();
    match tenant_list::check(&entries, config.driver, singles.iter().copied(), &[]) {
        Ok(names) => Ok(names),
        Err(error) => {
            eprintln!("strata: {}", described(&error, &shown));
            Err(Exit::Usage)
        }
    }
}

/// The entries of `tenants add`'s list as given (names, or a file's lines),
/// with how a place in it is shown (`FILE: line `, `name `); unchecked
/// (through `--server`, the service checks the list whole).
pub(super) fn read_entries(
    args: &super::TenantsAddArgs,
) -> Result<(String, Vec<strata_core::migrate::tenant_list::Entry>), Exit> {
    use strata_core::migrate::tenant_list;
    match &args.from {
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            };
            match text {
                Ok(text) => Ok((format!("{}: line ", path.display()), tenant_list::read_file(&text))),
                Err(error) => {
                    eprintln!("strata: {}: cannot read the tenant list: {error}", path.display());
                    Err(Exit::Usage)
                }
            }
        }
        None => Ok(("name ".to_string(), tenant_list::from_names(&args.names))),
    }
}

/// A list's refusal with each place said as `FILE: line N` or `name N`.
fn described(error: &strata_core::migrate::tenant_list::ListError, place: &str) -> String {
    use strata_core::migrate::tenant_list::ListError;
    match error {
        ListError::Empty => error.to_string(),
        ListError::Problems(problems) => {
            let shown: Vec<String> = problems.iter().take(10).map(|p| format!("{place}{p}")).collect();
            let more = problems.len().saturating_sub(10);
            let tail = if more > 0 { format!("; and {more} more") } else { String::new() };
            format!("{} problem(s) in the tenant list, nothing was added: {}{tail}", problems.len(), shown.join("; "))
        }
    }
}

/// `tenants add`: `createTenants` of the list, printed as `apply` prints a
/// version; the caller prints what came of it.
pub(super) async fn add(
    service: &std::sync::Arc<Service>,
    args: &super::TenantsAddArgs,
    names: Vec<String>,
    json: bool,
) -> Result<crate::service::CreateResult, crate::error::AppError> {
    use std::sync::Arc;

    use strata_core::migrate::operation::Operation;
    use strata_core::migrate::plan::Action;

    use crate::db::Observer;
    use crate::service::CreateRequest;
    let progress = Arc::new(super::progress::Progress::new(json));
    let observer: Arc<dyn Observer> = progress.clone();
    let action = if args.sync { Action::Sync } else { Action::Apply };
    let operation = Operation::NewTenants { tenants: names, action, shard: args.shard.clone() };
    let request = CreateRequest {
        observer: Some(observer),
        ..CreateRequest::new(args.version_name.clone(), operation, super::output::cli_caller())
    };
    let result = service.create(request).await;
    progress.finish();
    result
}
