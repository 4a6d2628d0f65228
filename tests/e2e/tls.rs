//! TLS to PostgreSQL with libpq's `sslmode` semantics (PostgreSQL runs of
//! the suite only), against a server whose certificate is self-signed and
//! X.509 version 1 — what Citus's `CREATE EXTENSION citus` installs
//! (`tests/servers.sh` makes one with `openssl x509 -req`). `prefer` (the
//! default) and `require` encrypt without verifying the certificate;
//! `verify-ca` checks it against `sslrootcert`, `verify-full` the host name
//! too. Each mode applies a migration that records, from the service's own
//! session, whether that session is encrypted (`pg_stat_ssl`).

use crate::support::{Backend, Workspace, backend};
use crate::topologies::{admin, code, config_for, env, fresh_database, run, text, with_database};

/// A single-schema migration that keeps whether the session running it is
/// encrypted, in table `ref.tls_<name>`.
fn write_session_probe(ws: &Workspace, order: usize, name: &str) {
    ws.write_migration(
        &format!("ref/{order:03}_{name}.sql"),
        &format!(
            "create table {{schema}}.tls_{name} as select ssl, version from pg_stat_ssl where pid = pg_backend_pid();\n"
        ),
    );
}

#[tokio::test]
async fn sslmodes_against_a_self_signed_x509_v1_certificate_behave_as_libpq() {
    if backend() != Backend::Postgres {
        return;
    }
    let admin_url = env("STRATA_TEST_PG_TLS_URL");
    let (root, wrong_root) = (env("STRATA_TEST_PG_TLS_ROOT"), env("STRATA_TEST_PG_TLS_WRONG_ROOT"));
    let ws = Workspace::new("basic");
    let database = format!("strata_tls_{}", ws.port);
    // The test's own sessions use the default mode too: this is already TLS
    // with the v1 certificate.
    fresh_database(&admin_url, &database).await;
    let url = with_database(&admin_url, &database);
    let port = url.rsplit_once(':').unwrap().1.split_once('/').unwrap().0.to_string();
    let on_localhost = format!("postgres://postgres@localhost:{port}/{database}");

    // The modes that connect: the encrypted ones must be TLS sessions.
    let connecting = [
        ("default", url.clone(), true),
        ("prefer", format!("{url}?sslmode=prefer"), true),
        ("require", format!("{url}?sslmode=require"), true),
        ("disable", format!("{url}?sslmode=disable"), false),
        ("verify_ca", format!("{url}?sslmode=verify-ca&sslrootcert={root}"), true),
        ("verify_full", format!("{on_localhost}?sslmode=verify-full&sslrootcert={root}"), true),
    ];
    for (order, (name, data_source, encrypted)) in connecting.iter().enumerate() {
        write_session_probe(&ws, 100 + order, name);
        let config = config_for(&ws, data_source, &format!("{name}.yaml"), "");
        let applied = crate::support::strata(&config, &["apply", "--version", name]).await;
        assert_eq!(code(&applied), 0, "sslmode {name}: {}", text(&applied));
        let mut conn = admin(&url).await;
        let (ssl, version): (bool, Option<String>) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("select ssl, version from ref.tls_{name}")))
                .fetch_one(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("ref.tls_{name}: {e}"));
        assert_eq!(ssl, *encrypted, "sslmode {name}: the service's session, TLS version {version:?}");
        assert_eq!(version.is_some(), *encrypted, "sslmode {name}");
    }

    // The modes that verify refuse what they cannot verify, before anything runs.
    write_session_probe(&ws, 200, "refused");
    let refused = [
        (
            "verify-full, a root that did not sign the certificate",
            format!("{on_localhost}?sslmode=verify-full&sslrootcert={wrong_root}"),
            "the server's certificate was refused (self-signed certificate)",
        ),
        (
            "verify-ca, a root that did not sign the certificate",
            format!("{url}?sslmode=verify-ca&sslrootcert={wrong_root}"),
            "the server's certificate was refused (self-signed certificate)",
        ),
        (
            "verify-full, the right root but an address the certificate does not name",
            format!("{url}?sslmode=verify-full&sslrootcert={root}"),
            "the server's certificate was refused (IP address mismatch)",
        ),
    ];
    for (case, data_source, expected) in refused {
        let config = config_for(&ws, &data_source, "refused.yaml", "");
        let output = crate::support::strata(&config, &["apply", "--version", "refused"]).await;
        let message = text(&output);
        eprintln!("{case}: {message}");
        assert_eq!(code(&output), 5, "{case}: {message}");
        assert!(message.contains("cannot connect to the database"), "{case}: {message}");
        assert!(message.contains(expected), "{case}: {message}");
        assert!(!message.contains(".c:"), "an OpenSSL source line leaked: {message}");
    }
    let mut conn = admin(&url).await;
    let tables: i64 =
        sqlx::query_scalar("select count(*) from pg_tables where schemaname = 'ref' and tablename = 'tls_refused'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(tables, 0, "a refused connection ran nothing");
    let versions: Vec<String> =
        sqlx::query_scalar("select name from svc.svc_versions order by id").fetch_all(&mut conn).await.unwrap();
    assert_eq!(versions, ["default", "prefer", "require", "disable", "verify_ca", "verify_full"]);
    drop(conn);
    let mut conn = admin(&admin_url).await;
    run(&mut conn, &format!("drop database if exists {database} with (force)")).await;
}
