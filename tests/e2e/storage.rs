//! `baseLocation` in S3 buckets (moto's server) and Azure blob containers
//! (Azurite), started by `tests/servers.sh`. The storage is independent of
//! the database, so these run in the SQLite pass of the suite only — but
//! for the desired schema read from a store, which plans on PostgreSQL.

use std::sync::Arc;

use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde_json::{Value, json};

use crate::support::{Backend, Server, Workspace, backend, data_dir};

/// Azurite's well-known development account key (public, documented by Microsoft).
const AZURITE_KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const AZURITE_ACCOUNT: &str = "devstoreaccount1";

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run `bash tests/servers.sh start`"))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    S3,
    Azure,
}

/// A fresh bucket or container, a client to fill it, and what the service needs to read it.
struct Remote {
    kind: Kind,
    name: String,
    store: Arc<dyn ObjectStore>,
}

/// A bucket or container name no other test of any run on the same
/// emulators has taken (the lanes run side by side against one moto and
/// one Azurite, which keep what earlier runs made).
fn unique_name() -> String {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("strata-{seconds}-{}-{n}", std::process::id())
}

impl Remote {
    async fn create(kind: Kind) -> Remote {
        let name = unique_name();
        match kind {
            Kind::S3 => {
                let endpoint = env("STRATA_TEST_S3_ENDPOINT");
                let status = reqwest::Client::new().put(format!("{endpoint}/{name}")).send().await.unwrap().status();
                assert!(status.is_success(), "create bucket: {status}");
                let store = object_store::aws::AmazonS3Builder::new()
                    .with_endpoint(endpoint)
                    .with_allow_http(true)
                    .with_bucket_name(&name)
                    .with_access_key_id("testing")
                    .with_secret_access_key("testing")
                    .with_region("us-east-1")
                    .build()
                    .unwrap();
                Remote { kind, name, store: Arc::new(store) }
            }
            Kind::Azure => {
                let url = env("STRATA_TEST_AZURITE_URL");
                let connection = format!(
                    "DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};\
                     BlobEndpoint={url}/{AZURITE_ACCOUNT};"
                );
                let script = "import sys\nfrom azure.storage.blob import BlobServiceClient\n\
                              BlobServiceClient.from_connection_string(sys.argv[1]).create_container(sys.argv[2])\n";
                let output = std::process::Command::new(env("STRATA_TEST_PYTHON"))
                    .args(["-c", script, &connection, &name])
                    .output()
                    .unwrap();
                assert!(output.status.success(), "create container: {}", String::from_utf8_lossy(&output.stderr));
                let store = object_store::azure::MicrosoftAzureBuilder::new()
                    .with_account(AZURITE_ACCOUNT)
                    .with_access_key(AZURITE_KEY)
                    .with_endpoint(format!("{url}/{AZURITE_ACCOUNT}"))
                    .with_allow_http(true)
                    .with_container_name(&name)
                    .build()
                    .unwrap();
                Remote { kind, name, store: Arc::new(store) }
            }
        }
    }

    /// `baseLocation` for this bucket/container with `prefix`.
    fn location(&self, prefix: &str) -> String {
        let tail = if prefix.is_empty() { String::new() } else { format!("/{prefix}") };
        match self.kind {
            Kind::S3 => format!("s3://{}{tail}", self.name),
            Kind::Azure => format!("https://{AZURITE_ACCOUNT}.blob.core.windows.net/{}{tail}", self.name),
        }
    }

    /// The environment the service reads this store's endpoint and credentials from.
    fn service_env(&self, key: &str) -> Vec<(&'static str, String)> {
        match self.kind {
            Kind::S3 => vec![
                ("AWS_ENDPOINT_URL", env("STRATA_TEST_S3_ENDPOINT")),
                ("AWS_ALLOW_HTTP", "true".into()),
                ("AWS_ACCESS_KEY_ID", "testing".into()),
                ("AWS_SECRET_ACCESS_KEY", key.into()),
                ("AWS_REGION", "us-east-1".into()),
            ],
            Kind::Azure => vec![
                ("AZURE_STORAGE_USE_EMULATOR", "true".into()),
                ("AZURITE_BLOB_STORAGE_URL", env("STRATA_TEST_AZURITE_URL")),
                ("BLOB_STORAGE_ACCOUNT", AZURITE_ACCOUNT.into()),
                ("BLOB_STORAGE_ACCESS_KEY", key.into()),
            ],
        }
    }

    fn good_key(&self) -> &'static str {
        match self.kind {
            Kind::S3 => "testing",
            Kind::Azure => AZURITE_KEY,
        }
    }

    async fn put(&self, key: &str, bytes: Vec<u8>) {
        self.store.put(&Path::from(key), PutPayload::from(bytes)).await.unwrap();
    }

    /// Uploads `tests/data/migrations/sqlite/<set>` under `prefix`.
    async fn upload_set(&self, set: &str, prefix: &str) {
        self.upload_dir(&data_dir().join("migrations/sqlite").join(set), prefix).await;
    }

    /// Uploads every file below `root` under `prefix`.
    async fn upload_dir(&self, root: &std::path::Path, prefix: &str) {
        let root = root.to_path_buf();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                    let key = if prefix.is_empty() { relative } else { format!("{prefix}/{relative}") };
                    self.put(&key, std::fs::read(&path).unwrap()).await;
                }
            }
        }
    }
}

/// Starts the service on SQLite with `baseLocation` in the remote store.
async fn serve(remote: &Remote, prefix: &str, key: &str) -> Server {
    serve_with(Workspace::new("basic"), remote, prefix, key, "").await
}

/// Starts the service of `ws` with `baseLocation` in the remote store and
/// `extra` configuration lines.
async fn serve_with(ws: Workspace, remote: &Remote, prefix: &str, key: &str, extra: &str) -> Server {
    let yaml = ws.config(extra).replace(
        &format!("baseLocation: {}", ws.migrations().display()),
        &format!("baseLocation: {}", remote.location(prefix)),
    );
    let env = remote.service_env(key);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_in_with_env(ws, &yaml, "", &env).await
}

fn files(list: &Value) -> Vec<String> {
    let mut files: Vec<String> =
        list.as_array().unwrap().iter().map(|m| m["file"].as_str().unwrap().to_string()).collect();
    files.sort();
    files
}

const BASIC_FILES: [&str; 6] = [
    "config/002.sql",
    "ref/001.sql",
    "scripts/config/runs.sql",
    "scripts/tenants/touch.sql",
    "tenants/001.sql",
    "tenants/003.sql",
];

async fn reads_exactly_the_configured_directories(kind: Kind) {
    for prefix in ["", "app/migrations"] {
        let remote = Remote::create(kind).await;
        remote.upload_set("basic", prefix).await;
        let key = |rest: &str| if prefix.is_empty() { rest.to_string() } else { format!("{prefix}/{rest}") };
        // Decoys: a sibling directory sharing a name prefix, a deeper folder, a file beside the directories.
        remote.put(&key("tenants-scripts/decoy.sql"), b"select 1;".to_vec()).await;
        remote.put(&key("tenants/deeper/decoy.sql"), b"select 1;".to_vec()).await;
        remote.put(&key("decoy.sql"), b"select 1;".to_vec()).await;
        if kind == Kind::S3 {
            // A "folder" marker, as the AWS console's "Create folder" makes.
            remote.put(&key("tenants/"), Vec::new()).await;
        }

        let server = serve(&remote, prefix, remote.good_key()).await;
        let listed = server.data("{ sourceMigrations { file checkSum } }", json!({})).await;
        assert_eq!(files(&listed["sourceMigrations"]), BASIC_FILES, "{kind:?} prefix {prefix:?}");
        let health = server.get("/health").await;
        assert_eq!(health.status(), 200, "{kind:?}");

        let result = server.create_version(json!({ "versionName": "from the store" })).await;
        assert_eq!(result["data"]["createVersion"]["summary"]["migrationsGrandTotal"], 2, "{result}");
        assert_eq!(server.ws.count("ref", "countries").await, 2);
        // Same checksums as the local copy: the bytes arrived unchanged.
        let local = server.ws.migrations().join("ref/001.sql");
        let stored = server.ws.rows("svc", "select checksum from svc_migrations where filename = 'ref/001.sql'").await;
        let expected = {
            use sha2::Digest;
            let digest = sha2::Sha256::digest(std::fs::read(local).unwrap());
            digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        assert_eq!(stored, [[json!(expected)]]);
    }
}

#[tokio::test]
async fn s3_locations_read_exactly_the_configured_directories() {
    if backend() == Backend::Sqlite {
        reads_exactly_the_configured_directories(Kind::S3).await;
    }
}

#[tokio::test]
async fn azure_locations_read_exactly_the_configured_directories() {
    if backend() == Backend::Sqlite {
        reads_exactly_the_configured_directories(Kind::Azure).await;
    }
}

#[tokio::test]
async fn moving_migrations_from_local_disk_to_a_bucket_changes_nothing() {
    if backend() != Backend::Sqlite {
        return;
    }
    let remote = Remote::create(Kind::S3).await;
    remote.upload_set("basic", "moved").await;
    let ws = Workspace::new("basic");
    let local_yaml = ws.config("");
    let env = remote.service_env("testing");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut server = Server::start_in_with_env(ws, &local_yaml, "", &env).await;
    server.create_version(json!({ "versionName": "local" })).await;

    server.kill_hard().await;
    let moved = local_yaml.replace(
        &format!("baseLocation: {}", server.ws.migrations().display()),
        &format!("baseLocation: {}", remote.location("moved")),
    );
    server.ws.write_config(&moved);
    server.restart().await;
    let result = server.create_version(json!({ "versionName": "from the bucket" })).await;
    let created = &result["data"]["createVersion"];
    assert_eq!(created["summary"]["migrationsGrandTotal"], 0, "{result}");
    assert_eq!(created["summary"]["scriptsGrandTotal"], 1, "{result}");
}

async fn a_missing_store_is_down_with_details(kind: Kind) {
    let remote = Remote::create(kind).await;
    let mut missing = Remote::create(kind).await;
    missing.name = format!("{}-missing", remote.name);
    let server = serve(&missing, "", missing.good_key()).await;
    // The store's answer, asked again while the check only timed out: an
    // emulator busy with the other storage tests (2,001-object listings
    // beside) once took more than the check's 5 s to say "not found".
    let mut details = String::new();
    for _ in 0..6 {
        let health = server.get("/health").await;
        assert_eq!(health.status(), 503, "{kind:?}");
        let body: Value = health.json().await.unwrap();
        assert_eq!(body["checks"][1]["name"], "Loader");
        assert_eq!(body["checks"][1]["status"], "DOWN");
        details = body["checks"][1]["data"]["details"].as_str().unwrap().to_string();
        if !details.starts_with("no answer within") {
            break;
        }
    }
    assert!(details.contains(&missing.name), "{details}");
    assert!(!details.contains(AZURITE_KEY), "{details}");
    let result = server.create_version(json!({ "versionName": "v" })).await;
    assert_eq!(result["errors"][0]["extensions"]["code"], "LOADER_ERROR", "{result}");
    assert_eq!(server.ws.count("svc", "svc_versions").await, 0);
}

#[tokio::test]
async fn a_missing_bucket_is_down_with_details() {
    if backend() == Backend::Sqlite {
        a_missing_store_is_down_with_details(Kind::S3).await;
    }
}

#[tokio::test]
async fn a_missing_container_is_down_with_details() {
    if backend() == Backend::Sqlite {
        a_missing_store_is_down_with_details(Kind::Azure).await;
    }
}

#[tokio::test]
async fn wrong_azure_credentials_are_down_and_never_printed() {
    if backend() != Backend::Sqlite {
        return;
    }
    let remote = Remote::create(Kind::Azure).await;
    remote.upload_set("basic", "").await;
    let wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ==";
    let server = serve(&remote, "", wrong).await;
    let health = server.get("/health").await;
    assert_eq!(health.status(), 503);
    let text = health.text().await.unwrap();
    assert!(text.contains("\"DOWN\""), "{text}");
    assert!(text.contains("403") || text.to_lowercase().contains("authoriz"), "{text}");
    assert!(!text.contains(wrong) && !text.contains(AZURITE_KEY), "{text}");
    let config = server.get("/v2/config").await.text().await.unwrap();
    assert!(!config.contains(wrong), "{config}");
    assert!(!server.log().contains(wrong));
}

/// Objects enough for S3's listing to take three pages (1,000 keys a page:
/// two full pages and one of a single key). Azurite pages at 5,000, so
/// there it is one page. Each object costs the emulator a PUT and the
/// service a GET (about 9 ms each on moto): 5,000 took two minutes a test.
const MANY_OBJECTS: usize = 2_001;

async fn lists_many_objects(kind: Kind) {
    let remote = Remote::create(kind).await;
    let uploads = (0..MANY_OBJECTS).map(|i| {
        let remote = &remote;
        async move { remote.put(&format!("big/ref/{i:05}.sql"), format!("select {i};").into_bytes()).await }
    });
    futures::stream::iter(uploads).buffer_unordered(64).collect::<Vec<()>>().await;
    let server = serve(&remote, "big", remote.good_key()).await;
    let listed = server.data("{ sourceMigrations(filters: {sourceDir: \"ref\"}) { file } }", json!({})).await;
    let files = files(&listed["sourceMigrations"]);
    assert_eq!(files.len(), MANY_OBJECTS, "{kind:?}");
    let expected: Vec<String> = (0..MANY_OBJECTS).map(|i| format!("ref/{i:05}.sql")).collect();
    assert_eq!(files, expected, "{kind:?}: every key once, in order");
    let one = server.data("{ sourceMigration(file: \"ref/02000.sql\") { contents } }", json!({})).await;
    assert_eq!(one, json!({ "sourceMigration": { "contents": "select 2000;" } }));
}

#[tokio::test]
async fn an_s3_bucket_of_2001_objects_is_listed_through_its_three_pages() {
    if backend() == Backend::Sqlite {
        lists_many_objects(Kind::S3).await;
    }
}

#[tokio::test]
async fn an_azure_container_of_2001_objects_is_listed_completely() {
    if backend() == Backend::Sqlite {
        lists_many_objects(Kind::Azure).await;
    }
}

/// The tenants' desired schema in the bucket or container, beside the
/// migrations (`desiredSchema: schema/tenants.sql`), on PostgreSQL (desired
/// state plans there and on MariaDB): `desiredDiff` and
/// `applyDesiredSchema` without a text read it from the store — the same
/// plan as the text sent — and bring every tenant to it.
async fn the_desired_schema_is_read_from_the_store(kind: Kind) {
    const DESIRED: &str = "create table {schema}.users (id serial primary key, email text not null);\n\
                           create index users_email on {schema}.users (email);\n\
                           create table {schema}.notes (id integer primary key, body text);\n";
    let remote = Remote::create(kind).await;
    let ws = Workspace::new("basic");
    remote.upload_dir(&ws.migrations(), "app").await;
    remote.put("app/schema/tenants.sql", DESIRED.as_bytes().to_vec()).await;
    let server = serve_with(ws, &remote, "app", remote.good_key(), "desiredSchema: schema/tenants.sql\n").await;
    let singles = server.create_version(json!({ "versionName": "single schemas" })).await;
    assert!(singles.get("errors").is_none(), "{singles}");
    for tenant in ["t1", "t2", "t3"] {
        let created = server.create_tenant(json!({ "tenantName": tenant, "versionName": tenant })).await;
        assert!(created.get("errors").is_none(), "{created}");
    }
    server.ws.execute("svc", "drop index t3.users_email").await;

    const DIFF: &str = "query($desired: String) { desiredDiff(desired: $desired) { tenants differing groups { \
                        plan tenants steps { sql } } } }";
    let stored = server.data(DIFF, json!({})).await;
    let sent = server.data(DIFF, json!({ "desired": DESIRED })).await;
    assert_eq!(stored, sent, "{kind:?}");
    let diff = &stored["desiredDiff"];
    assert_eq!((diff["tenants"].as_u64(), diff["differing"].as_u64()), (Some(3), Some(3)), "{kind:?}: {stored}");
    let groups: Vec<&Value> = diff["groups"].as_array().unwrap().iter().map(|g| &g["tenants"]).collect();
    assert_eq!(groups, [&json!(["t1", "t2"]), &json!(["t3"])], "{kind:?}: {stored}");
    assert!(diff["groups"][0]["steps"][0]["sql"].as_str().unwrap().starts_with("CREATE TABLE {schema}.notes"));

    const APPLY: &str = "mutation { applyDesiredSchema(input: { versionName: \"to desired\" }) { \
                         versions { summary { tenants } } left { tenants } } }";
    let applied = server.graphql(APPLY, json!({})).await;
    assert!(applied.get("errors").is_none(), "{kind:?}: {applied}");
    let tenants: Vec<&Value> = applied["data"]["applyDesiredSchema"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["summary"]["tenants"])
        .collect();
    assert_eq!(tenants, [&json!(2), &json!(1)], "{kind:?}: {applied}");
    let after = server.data(DIFF, json!({})).await;
    assert_eq!(after["desiredDiff"]["differing"], 0, "{kind:?}: {after}");
    assert_eq!(server.ws.migrations_recorded_twice().await, Vec::<Vec<Value>>::new());
}

#[tokio::test]
async fn the_desired_schema_is_read_from_an_s3_bucket() {
    if backend() == Backend::Postgres {
        the_desired_schema_is_read_from_the_store(Kind::S3).await;
    }
}

#[tokio::test]
async fn the_desired_schema_is_read_from_an_azure_container() {
    if backend() == Backend::Postgres {
        the_desired_schema_is_read_from_the_store(Kind::Azure).await;
    }
}
