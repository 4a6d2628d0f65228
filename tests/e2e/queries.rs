//! Every query of the API, and the GraphQL features the spec promises:
//! introspection, several operations with operationName, aliases, variables,
//! batches.

use serde_json::{Value, json};

use crate::support::{Backend, Server, backend};

fn files(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|m| m["file"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn source_migrations_with_and_without_filters() {
    let server = Server::start("basic", "").await;
    let all =
        server.data("{ sourceMigrations { file name sourceDir migrationType checkSum contents } }", json!({})).await;
    assert_eq!(
        files(&all["sourceMigrations"]),
        [
            "ref/001.sql",
            "tenants/001.sql",
            "config/002.sql",
            "tenants/003.sql",
            "scripts/config/runs.sql",
            "scripts/tenants/touch.sql"
        ]
    );
    let first = &all["sourceMigrations"][1];
    assert_eq!(first["name"], "001.sql");
    assert_eq!(first["sourceDir"], "tenants");
    assert_eq!(first["migrationType"], "TenantMigration");
    let on_disk = std::fs::read_to_string(server.ws.migrations().join("tenants/001.sql")).unwrap();
    assert_eq!(first["contents"], json!(on_disk));
    assert_eq!(first["checkSum"].as_str().unwrap().len(), 64);

    let query = "query($f: SourceMigrationFilters) { sourceMigrations(filters: $f) { file } }";
    for (filters, expected) in [
        (json!({ "migrationType": "SingleScript" }), vec!["scripts/config/runs.sql"]),
        (json!({ "sourceDir": "tenants" }), vec!["tenants/001.sql", "tenants/003.sql"]),
        (json!({ "name": "001.sql" }), vec!["ref/001.sql", "tenants/001.sql"]),
        (json!({ "name": "001.sql", "migrationType": "TenantMigration" }), vec!["tenants/001.sql"]),
        (json!({ "file": "config/002.sql" }), vec!["config/002.sql"]),
        (json!({ "file": "nope" }), vec![]),
    ] {
        let data = server.data(query, json!({ "f": filters })).await;
        assert_eq!(files(&data["sourceMigrations"]), expected, "{filters}");
    }
}

#[tokio::test]
async fn source_migration_by_file_or_null() {
    let server = Server::start("basic", "").await;
    let query = "query($file: String!) { sourceMigration(file: $file) { file migrationType contents } }";
    let found = server.data(query, json!({ "file": "scripts/tenants/touch.sql" })).await;
    let on_disk = std::fs::read_to_string(server.ws.migrations().join("scripts/tenants/touch.sql")).unwrap();
    assert_eq!(
        found,
        json!({ "sourceMigration": { "file": "scripts/tenants/touch.sql", "migrationType": "TenantScript",
                "contents": on_disk } })
    );
    let missing = server.data(query, json!({ "file": "ref/999.sql" })).await;
    assert_eq!(missing, json!({ "sourceMigration": null }));
}

#[tokio::test]
async fn versions_version_and_db_migration() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "first" })).await;
    server.create_tenant(json!({ "tenantName": "abc", "versionName": "second" })).await;

    let all = server.data("{ versions { id name created dbMigrations { file schema } } }", json!({})).await;
    let versions = all["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2);
    assert_eq!((versions[0]["id"].clone(), versions[0]["name"].clone()), (json!(1), json!("first")));
    assert_eq!((versions[1]["id"].clone(), versions[1]["name"].clone()), (json!(2), json!("second")));
    let created = versions[0]["created"].as_str().unwrap();
    assert!(chrono_like_rfc3339_utc(created), "{created}");
    assert_eq!(versions[1]["dbMigrations"].as_array().unwrap().len(), 3);

    let by_file = server.data("{ versions(file: \"tenants/001.sql\") { name } }", json!({})).await;
    assert_eq!(by_file, json!({ "versions": [{ "name": "second" }] }));
    let by_script = server.data("{ versions(file: \"scripts/config/runs.sql\") { name } }", json!({})).await;
    assert_eq!(by_script, json!({ "versions": [{ "name": "first" }] }));
    let none = server.data("{ versions(file: \"nope.sql\") { name } }", json!({})).await;
    assert_eq!(none, json!({ "versions": [] }));

    let one =
        server.data("{ version(id: 2) { id name dbMigrations { id file schema migrationType } } }", json!({})).await;
    assert_eq!(one["version"]["name"], "second");
    assert_eq!(
        one["version"]["dbMigrations"][0],
        json!({ "id": 4, "file": "tenants/001.sql", "schema": "abc", "migrationType": "TenantMigration" })
    );
    assert_eq!(server.data("{ version(id: 99) { id } }", json!({})).await, json!({ "version": null }));

    let migration = server
        .data(
            "{ dbMigration(id: 1) { id name migrationType sourceDir file contents checkSum schema created } }",
            json!({}),
        )
        .await;
    let m = &migration["dbMigration"];
    assert_eq!(m["file"], "ref/001.sql");
    assert_eq!(m["schema"], "ref");
    assert_eq!(m["sourceDir"], "ref");
    assert_eq!(m["migrationType"], "SingleMigration");
    let on_disk = std::fs::read_to_string(server.ws.migrations().join("ref/001.sql")).unwrap();
    assert_eq!(m["contents"], json!(on_disk));
    assert_eq!(m["created"], json!(created));
    assert_eq!(server.data("{ dbMigration(id: 999) { id } }", json!({})).await, json!({ "dbMigration": null }));
}

fn chrono_like_rfc3339_utc(text: &str) -> bool {
    text.len() == "2026-11-22T05:38:56.110195Z".len() && text.ends_with('Z') && text.as_bytes()[10] == b'T'
}

#[tokio::test]
async fn tenants_query_lists_tenants_in_order() {
    let server = Server::start("basic", "").await;
    assert_eq!(server.data("{ tenants { name } }", json!({})).await, json!({ "tenants": [] }));
    for name in ["t1", "t2", "t3"] {
        server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
    }
    assert_eq!(
        server.data("{ tenants { name } }", json!({})).await,
        json!({ "tenants": [{ "name": "t1" }, { "name": "t2" }, { "name": "t3" }] })
    );
}

/// The names of `tenants(first:, after:)`.
async fn tenant_page(server: &Server, first: i64, after: Value) -> Vec<String> {
    let query = "query($first: Int, $after: String) { tenants(first: $first, after: $after) { name } }";
    let data = server.data(query, json!({ "first": first, "after": after })).await;
    data["tenants"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn tenants_come_in_pages_in_order_of_name_after_the_last_one_seen() {
    let server = Server::start("basic", "").await;
    for name in ["t3", "t10", "t1", "t2"] {
        server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
    }
    let page = |first: i64, after: Value| tenant_page(&server, first, after);
    assert_eq!(page(2, Value::Null).await, ["t1", "t10"]);
    assert_eq!(page(2, json!("t10")).await, ["t2", "t3"]);
    // The last one seen need not exist any more.
    assert_eq!(page(5, json!("t15")).await, ["t2", "t3"]);
    assert!(page(5, json!("t3")).await.is_empty());
    let refused = server.graphql("{ tenants(first: -1) { name } }", json!({})).await;
    assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
    // Unpaged: every tenant, as migrator's clients read them.
    let all = server.data("{ tenants { name } }", json!({})).await;
    assert_eq!(all["tenants"].as_array().unwrap().len(), 4);
}

/// A custom `tenantSelectSQL` with more columns than the name, an order of
/// its own (newest first), a trailing `;` and a comment comes in the same
/// pages as the built-in list (on PostgreSQL cut by the database around it,
/// elsewhere kept as its rows stream by), and `tenantCount` counts it.
#[tokio::test]
async fn a_custom_tenant_select_of_several_columns_comes_in_pages_and_is_counted() {
    let parameter = match backend() {
        Backend::Mysql => "?",
        Backend::Sqlserver => "@P1",
        _ => "$1",
    };
    let qualifier = if backend() == Backend::Sqlite { "" } else { "svc." };
    let extra = format!(
        "tenantSelectSQL: \"select name, tier from svc.customers order by name desc ; -- newest first\"\n\
         tenantInsertSQL: insert into svc.customers (name, tier) values ({parameter}, 'standard')\n"
    );
    let server = Server::start("basic", &extra).await;
    let table = format!("create table {qualifier}customers (name varchar(64) primary key, tier varchar(16))");
    server.ws.execute("svc", &table).await;
    for name in ["t3", "t10", "t1", "t2", "tb_x"] {
        let created = server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    let page = |first: i64, after: Value| tenant_page(&server, first, after);
    assert_eq!(page(2, Value::Null).await, ["t1", "t10"]);
    assert_eq!(page(2, json!("t10")).await, ["t2", "t3"]);
    assert_eq!(page(5, json!("t3")).await, ["tb_x"]);
    assert!(page(5, json!("tb_x")).await.is_empty());
    assert!(page(0, Value::Null).await.is_empty());
    // Unpaged: in the select's own order, as migrator's clients read it.
    let all = server.data("{ tenants { name } tenantCount }", json!({})).await;
    assert_eq!(
        all,
        json!({
            "tenants": [{ "name": "tb_x" }, { "name": "t3" }, { "name": "t2" }, { "name": "t10" }, { "name": "t1" }],
            "tenantCount": 5
        })
    );
}

/// Versions come in pages in order of id, after the id of the last one
/// seen (which need not exist); the counts answer without the lists.
#[tokio::test]
async fn versions_come_in_pages_by_id_and_counts_need_no_list() {
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "v1" })).await;
    for name in ["t1", "t2", "t3"] {
        server.create_tenant(json!({ "tenantName": name, "versionName": name })).await;
    }
    let ids = |data: &Value| -> Vec<i64> {
        data["versions"].as_array().unwrap().iter().map(|v| v["id"].as_i64().unwrap()).collect()
    };
    let all = ids(&server.data("{ versions { id } }", json!({})).await);
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(all.windows(2).all(|w| w[0] < w[1]), "oldest first: {all:?}");
    let page = |first: i64, after: Value| {
        let server = &server;
        async move {
            let query = "query($first: Int, $after: Int) { versions(first: $first, after: $after) { id } }";
            ids(&server.data(query, json!({ "first": first, "after": after })).await)
        }
    };
    assert_eq!(page(2, Value::Null).await, all[..2]);
    assert_eq!(page(2, json!(all[1])).await, all[2..]);
    assert_eq!(page(5, json!(0)).await, all, "after an id that is none");
    assert!(page(5, json!(all[3])).await.is_empty());
    assert!(page(5, json!(all[3] + 100)).await.is_empty());
    // From the end: the newest, then those before the first one seen,
    // oldest first within a page.
    let last = |last: i64, before: Value| {
        let server = &server;
        async move {
            let query = "query($last: Int, $before: Int) { versions(last: $last, before: $before) { id } }";
            ids(&server.data(query, json!({ "last": last, "before": before })).await)
        }
    };
    assert_eq!(last(2, Value::Null).await, all[2..]);
    assert_eq!(last(2, json!(all[2])).await, all[..2]);
    assert_eq!(last(5, json!(all[3] + 100)).await, all, "before an id past the last");
    assert!(last(5, json!(all[0])).await.is_empty());
    let with_file = "query($f: String) { versions(file: $f, last: 1) { id } }";
    let applied_ref = server.data(with_file, json!({ "f": "ref/001.sql" })).await;
    assert_eq!(ids(&applied_ref), all[..1], "a page of the versions of a file");
    for refused in
        ["{ versions(first: -1) { id } }", "{ versions(last: -1) { id } }", "{ versions(first: 1, last: 1) { id } }"]
    {
        let refused = server.graphql(refused, json!({})).await;
        assert_eq!(refused["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{refused}");
    }
    assert_eq!(
        server.data("{ versionCount tenantCount }", json!({})).await,
        json!({ "versionCount": 4, "tenantCount": 3 })
    );
}

/// Issue 64: listing a large fleet costs the service about the list's own
/// size, whole or in pages. 20,000 tenants (rows of the tenant table: the
/// listing reads no schema) read unpaged, then in pages of 1,000, each in
/// order of name and each tenant once. The service's peak resident memory
/// over the unpaged answer stays within 8 MiB of what it held before
/// (measured 5.7 MiB in the debug build: async-graphql holds the answer as
/// a value tree, some 290 bytes a tenant; 10 MiB while each tenant's map
/// kept room for three fields, before `OneByOne` shrank it; 37 MiB with a
/// future per item, all alive at once, as before 5b96366), over the pages
/// within 1 MiB (measured 0 on PostgreSQL, SQLite and MariaDB since each
/// page is cut by the database or kept as the list streams by; 2–3 MiB
/// while every page read and sorted the whole list).
#[tokio::test]
async fn twenty_thousand_tenants_listed_whole_and_in_pages_take_little_memory() {
    const TENANTS: usize = 20_000;
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "books" })).await;
    server.ws.add_tenant_rows(TENANTS as u32).await;
    let names = |data: &Value| -> Vec<String> {
        data["tenants"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let expected: Vec<String> = (1..=TENANTS).map(|i| format!("t{i:05}")).collect();
    // Warm: the first request builds what every later one reuses (pools,
    // the schema's caches).
    server.data("{ tenants(first: 1) { name } }", json!({})).await;
    let grown_over = |server: &Server, resting: u64| server.memory_kib().1.saturating_sub(resting);

    let (resting, _) = server.memory_kib();
    server.reset_peak_memory();
    let mut whole = names(&server.data("{ tenants { name } }", json!({})).await);
    let grown = grown_over(&server, resting);
    whole.sort();
    assert_eq!(whole, expected);
    eprintln!("unpaged: {grown} KiB over {resting} KiB at rest");
    assert!(grown < 8 * 1024, "the unpaged list of {TENANTS} took {grown} KiB over the {resting} KiB at rest");

    let (resting, _) = server.memory_kib();
    server.reset_peak_memory();
    let mut paged: Vec<String> = Vec::with_capacity(TENANTS);
    let query = "query($after: String) { tenants(first: 1000, after: $after) { name } }";
    loop {
        let page = names(&server.data(query, json!({ "after": paged.last() })).await);
        let done = page.len() < 1000;
        paged.extend(page);
        if done {
            break;
        }
    }
    let grown = grown_over(&server, resting);
    assert_eq!(paged, expected, "pages in order of name, each tenant once");
    eprintln!("paged: {grown} KiB over {resting} KiB at rest");
    assert!(grown < 1024, "{TENANTS} tenants in pages took {grown} KiB over the {resting} KiB at rest");
}

/// Abuse by reading: clients at once, each asking in one request for as
/// many whole-fleet lists as a request may hold (`fleetFields`, 4: each the
/// tenant list of 20,000, unpaged, or — every other client — as a "page" of
/// 2^31 - 1 given in a variable, which was taken for a page and ran without
/// a slot until 2026-12-05). Every client gets every list whole, and
/// the service's peak grows by what two such requests hold (the process's
/// query slots), not with the number of clients. Before the slots
/// (6ebe86f), on PostgreSQL and MariaDB the reads at once asked the
/// service's pool for more connections than it holds and readers failed
/// after its 5 s wait (`POOL_EXHAUSTED`); on SQLite the peak was +51 MiB.
/// With them (debug build): +43–45 MiB on SQLite, PostgreSQL and MariaDB —
/// one request's lists take ~23 MiB; twelve at once would take ~280 MiB,
/// over twice the bound. (48 clients took 160 to 200 s of a CI run's
/// suite, serializing 3.8 million names; twelve tell two at a time from
/// all at once as surely.)
#[tokio::test]
async fn clients_at_once_asking_for_whole_fleet_lists_are_all_answered_two_requests_at_a_time() {
    const TENANTS: usize = 20_000;
    const CLIENTS: usize = 12;
    const LISTS: usize = 4;
    let server = Server::start("basic", "").await;
    server.create_version(json!({ "versionName": "books" })).await;
    server.ws.add_tenant_rows(TENANTS as u32).await;
    let unpaged: Vec<String> = (0..LISTS).map(|i| format!("l{i}: tenants {{ name }}")).collect();
    let unpaged = format!("{{ {} }}", unpaged.join(" "));
    let paged: Vec<String> = (0..LISTS).map(|i| format!("l{i}: tenants(first: $all) {{ name }}")).collect();
    let paged = format!("query($all: Int) {{ {} }}", paged.join(" "));
    // The pool's connections opened first, as a service that has been
    // answering has them: on a machine saturated by the CI's builds,
    // opening eight at once took a server past the pool's 5 s wait (a
    // fresh run's failure, on the service's own pool, with the slots).
    let warm = futures::future::join(server.data(&unpaged, json!({})), server.data(&unpaged, json!({})));
    drop(warm.await);
    let (resting, _) = server.memory_kib();
    server.reset_peak_memory();
    let answers = futures::future::join_all((0..CLIENTS).map(|client| match client % 2 {
        0 => server.data(&unpaged, json!({})),
        _ => server.data(&paged, json!({ "all": i32::MAX })),
    }))
    .await;
    let grown = server.memory_kib().1.saturating_sub(resting);
    for answer in &answers {
        for i in 0..LISTS {
            let list = answer[format!("l{i}")].as_array().unwrap();
            assert_eq!(list.len(), TENANTS, "every list whole");
        }
    }
    eprintln!("{CLIENTS} clients x {LISTS} whole lists: {grown} KiB over {resting} KiB at rest");
    assert!(grown < 128 * 1024, "{CLIENTS} clients took {grown} KiB over the {resting} KiB at rest");
}

#[tokio::test]
async fn several_operations_aliases_variables_and_batches() {
    let server = Server::start("basic", "").await;
    let document = "query Sources { all: sourceMigrations { file } scripts: sourceMigrations(filters: {migrationType: SingleScript}) { file } }
                    query Tenants { tenants { name } }
                    mutation Create($name: String!) { createVersion(input: {versionName: $name}) { version { name } } }";
    let response: Value = server
        .post_raw(
            json!({ "query": document, "operationName": "Create", "variables": { "name": "via op" } }).to_string(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(response, json!({ "data": { "createVersion": { "version": { "name": "via op" } } } }));
    let response: Value = server
        .post_raw(json!({ "query": document, "operationName": "Sources" }).to_string())
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(response["data"]["all"].as_array().unwrap().len(), 6);
    assert_eq!(response["data"]["scripts"], json!([{ "file": "scripts/config/runs.sql" }]));

    let ambiguous: Value = server.post_raw(json!({ "query": document }).to_string()).await.json().await.unwrap();
    assert_eq!(ambiguous["errors"][0]["message"], "Operation name required in request.");

    let batch: Value = server
        .post_raw(
            json!([{ "query": "{ tenants { name } }" }, { "query": "{ v: version(id: 1) { name } }" }]).to_string(),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(batch, json!([{ "data": { "tenants": [] } }, { "data": { "v": { "name": "via op" } } }]));
}

#[tokio::test]
async fn introspection_describes_the_spec_types() {
    let server = Server::start("basic", "").await;
    let data = server
        .data(
            "{ __schema { queryType { name } mutationType { name } }
               migration: __type(name: \"Migration\") { kind possibleTypes { name } fields { name type { kind ofType { name } } } }
               version: __type(name: \"VersionInput\") { inputFields { name defaultValue type { kind name ofType { name } } } }
               types: __type(name: \"MigrationType\") { enumValues { name } } }",
            json!({}),
        )
        .await;
    assert_eq!(data["__schema"], json!({ "queryType": { "name": "Query" }, "mutationType": { "name": "Mutation" } }));
    assert_eq!(data["migration"]["kind"], "INTERFACE");
    let mut possible: Vec<&str> =
        data["migration"]["possibleTypes"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    possible.sort();
    assert_eq!(possible, ["DBMigration", "SourceMigration"]);
    let fields: Vec<&str> =
        data["migration"]["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(fields, ["name", "migrationType", "sourceDir", "file", "contents", "checkSum"]);
    assert_eq!(
        data["version"]["inputFields"],
        json!([
            { "name": "versionName", "defaultValue": null, "type": { "kind": "NON_NULL", "name": null, "ofType": { "name": "String" } } },
            { "name": "action", "defaultValue": "Apply", "type": { "kind": "ENUM", "name": "Action", "ofType": null } },
            { "name": "dryRun", "defaultValue": "false", "type": { "kind": "SCALAR", "name": "Boolean", "ofType": null } },
            // Added after the spec's fields: the rollout gate's override, a Sync's last file.
            { "name": "overrideRollout", "defaultValue": null, "type": { "kind": "SCALAR", "name": "Boolean", "ofType": null } },
            { "name": "syncTo", "defaultValue": null, "type": { "kind": "SCALAR", "name": "String", "ofType": null } }
        ])
    );
    assert_eq!(
        data["types"]["enumValues"],
        json!([{ "name": "SingleMigration" }, { "name": "TenantMigration" }, { "name": "SingleScript" }, { "name": "TenantScript" }])
    );
}
