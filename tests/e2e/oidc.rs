//! Tokens of a real OpenID Provider (npm `oidc-provider`, started here with
//! keys of the test's own): a client's JWT authenticates with the roles its
//! groups map to; forged, expired, not-yet-valid, wrong-audience,
//! wrong-issuer, `alg: none` and HMAC-confused tokens are refused; after
//! the provider rotates its key, tokens signed with the new key work.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Value, json};

use crate::support::{Server, Workspace, free_port};

const AUDIENCE: &str = "https://strata.example/api";

struct Provider {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/oidc/provider.mjs")
}

/// Adds a key to the provider's key file (it signs from then on); its kid
/// and private PEM.
fn keygen(dir: &Path, name: &str) -> (String, Vec<u8>) {
    let pem = dir.join(format!("{name}.pem"));
    let output =
        Command::new("node").arg(script()).arg("keygen").arg(dir.join("keys.json")).arg(&pem).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    (String::from_utf8(output.stdout).unwrap().trim().to_string(), std::fs::read(pem).unwrap())
}

/// Whether the provider at `port` answers its discovery document with 200
/// (HTTP/1.0 over a plain socket: the harness's wait is synchronous).
fn discovery_answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = "GET /.well-known/openid-configuration HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    let mut head = [0u8; 12];
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_exact(&mut head).is_ok()
        && head.starts_with(b"HTTP/1.")
        && head.ends_with(b" 200")
}

impl Provider {
    fn start(dir: &Path, port: u16) -> Provider {
        let modules = std::env::var("STRATA_TEST_NODE_MODULES")
            .expect("STRATA_TEST_NODE_MODULES is not set: run `bash tests/servers.sh start`");
        let child = Command::new("node")
            .arg(script())
            .arg("serve")
            .arg(modules)
            .arg(port.to_string())
            .arg(dir.join("keys.json"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("provider.log")).unwrap())
            .spawn()
            .unwrap();
        let mut provider = Provider { child, port, dir: dir.to_path_buf() };
        // Node loads oidc-provider in about a second alone, and took over 10 s
        // in a fresh CI run with every lane compiling or testing beside it:
        // the wait ends when it answers its discovery document or exits,
        // bounded at 60 s (listening, it once took over the service's 5 s
        // to answer its first request under CI's load).
        let log = || std::fs::read_to_string(dir.join("provider.log")).unwrap_or_default();
        let started = std::time::Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if discovery_answers(port) {
                return provider;
            }
            if let Some(status) = provider.child.try_wait().unwrap() {
                panic!("the OpenID Provider exited ({status}): {}", log());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the OpenID Provider did not listen within 60 s: {}", log());
    }

    fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// An access token for `client` by the client-credentials grant.
    async fn token(&self, client: &str) -> String {
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client),
            ("client_secret", &format!("{client}-secret")),
            ("scope", "api"),
        ];
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let response = reqwest::Client::new()
            .post(format!("{}/token", self.issuer()))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        body["access_token"].as_str().unwrap_or_else(|| panic!("no token: {body}")).to_string()
    }

    fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = Provider::start(&self.dir.clone(), self.port);
    }
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

async fn status(server: &Server, token: &str, query: &str) -> (u16, Value) {
    let response = server
        .client
        .post(server.url("/v2/service"))
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .body(json!({ "query": query }).to_string())
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

/// Waits (up to 60 s) until rollout `id` has `wanted` status.
async fn wait_for_rollout(server: &Server, token: &str, id: i64, wanted: &str) {
    for _ in 0..600 {
        let (_, answer) = status(server, token, "{ rollouts { id status } }").await;
        let rollouts = answer["data"]["rollouts"].as_array().cloned().unwrap_or_default();
        if rollouts.iter().any(|r| r["id"] == id && r["status"] == wanted) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("rollout {id} never reached {wanted}");
}

#[tokio::test]
async fn tokens_of_a_real_openid_provider_authenticate_and_forgeries_do_not() {
    let keys = tempfile::tempdir().unwrap();
    let (kid_a, pem_a) = keygen(keys.path(), "a");
    let mut provider = Provider::start(keys.path(), free_port());
    let ws = Workspace::new("basic");
    let yaml = ws.config(&format!(
        "auth:\n  oidc:\n    issuer: {}\n    audience: {AUDIENCE}\n    roles: {{ dba: admin, release: approver, eng: viewer }}\n",
        provider.issuer()
    ));
    let server = Server::start_in(ws, &yaml, "").await;

    let alice = provider.token("alice").await;
    let (code, answer) = status(&server, &alice, "{ identity { actor roles } }").await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["data"]["identity"], json!({ "actor": "oidc:alice <alice@example.com>", "roles": ["admin"] }));
    let create = r#"mutation { createVersion(input: { versionName: "by alice" }) { version { id } } }"#;
    let (code, answer) = status(&server, &alice, create).await;
    assert_eq!(code, 200, "{answer}");
    let viola = provider.token("viola").await;
    let (code, answer) = status(&server, &viola, create).await;
    assert_eq!((code, answer["errors"][0]["extensions"]["code"].as_str()), (403, Some("FORBIDDEN")), "{answer}");

    // Tokens the provider did not issue, or not for us, or not now.
    let claims = |patch: Value| {
        let mut claims = json!({ "sub": "mallory", "iss": provider.issuer(), "aud": AUDIENCE, "exp": now() + 300,
            "groups": ["dba"] });
        for (key, value) in patch.as_object().unwrap() {
            claims[key] = value.clone();
        }
        claims
    };
    let signed = |claims: &Value, pem: &[u8], kid: &str| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_string());
        encode(&header, claims, &EncodingKey::from_rsa_pem(pem).unwrap()).unwrap()
    };
    // The control: signed with the provider's key, accepted.
    let (code, answer) = status(&server, &signed(&claims(json!({})), &pem_a, &kid_a), "{ identity { actor } }").await;
    assert_eq!(code, 200, "{answer}");

    // One subject is one person, whatever else its token says: the
    // starter of a rollout cannot approve it with an ID-token-like token
    // that carries an email.
    let as_sam = signed(&claims(json!({ "sub": "sam" })), &pem_a, &kid_a);
    let sam_with_email = signed(&claims(json!({ "sub": "sam", "email": "sam@example.com" })), &pem_a, &kid_a);
    let tenant = r#"mutation { createTenant(input: { tenantName: "t1", versionName: "t1" }) { version { id } } }"#;
    assert_eq!(status(&server, &as_sam, tenant).await.0, 200);
    let start = r#"mutation { startRollout(versionName: "r", waves: ["t1:approve", "rest"]) { id } }"#;
    let (code, answer) = status(&server, &as_sam, start).await;
    assert_eq!(code, 200, "{answer}");
    let id = answer["data"]["startRollout"]["id"].as_i64().unwrap();
    wait_for_rollout(&server, &as_sam, id, "AWAITING_APPROVAL").await;
    let approve = format!("mutation {{ approveRollout(id: {id}) {{ status }} }}");
    let (code, answer) = status(&server, &sam_with_email, &approve).await;
    assert_eq!((code, answer["errors"][0]["extensions"]["code"].as_str()), (403, Some("FORBIDDEN")), "{answer}");
    let refusal = answer["errors"][0]["message"].as_str().unwrap();
    let issuer = provider.issuer();
    assert!(
        refusal.contains(&format!(
            "oidc:sam [oidc:{issuer}#sam] started this rollout, and oidc:sam <sam@example.com> [oidc:{issuer}#sam] is \
             the same person"
        )),
        "{refusal}"
    );
    let as_tom = signed(&claims(json!({ "sub": "tom" })), &pem_a, &kid_a);
    let (code, answer) = status(&server, &as_tom, &approve).await;
    assert_eq!(code, 200, "{answer}");
    wait_for_rollout(&server, &as_sam, id, "COMPLETED").await;
    let versions_before = server.ws.count("svc", "svc_versions").await;
    let audit = server.ws.rows("svc", "select actor from svc_audit where action = 'startRollout'").await;
    assert_eq!(audit[0][0], json!(format!("oidc:sam [oidc:{}#sam]", provider.issuer())), "{audit:?}");

    let other = tempfile::tempdir().unwrap();
    let (_, pem_forger) = keygen(other.path(), "forger");
    let b64 = |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let unsigned = format!("{}.{}.", b64(&json!({ "alg": "none", "kid": kid_a })), b64(&claims(json!({}))));
    let public_jwk: Value = reqwest::get(format!("{}/jwks", provider.issuer())).await.unwrap().json().await.unwrap();
    let mut hmac_header = Header::new(Algorithm::HS256);
    hmac_header.kid = Some(kid_a.clone());
    let hmac =
        encode(&hmac_header, &claims(json!({})), &EncodingKey::from_secret(public_jwk.to_string().as_bytes())).unwrap();
    for (what, token) in [
        ("forged", signed(&claims(json!({})), &pem_forger, &kid_a)),
        ("expired", signed(&claims(json!({ "exp": now() - 3600 })), &pem_a, &kid_a)),
        ("not yet valid", signed(&claims(json!({ "nbf": now() + 3600 })), &pem_a, &kid_a)),
        ("wrong audience", signed(&claims(json!({ "aud": "https://other.example" })), &pem_a, &kid_a)),
        ("wrong issuer", signed(&claims(json!({ "iss": "http://127.0.0.1:1" })), &pem_a, &kid_a)),
        (
            "no subject",
            signed(&json!({ "iss": provider.issuer(), "aud": AUDIENCE, "exp": now() + 300 }), &pem_a, &kid_a),
        ),
        ("alg none", unsigned),
        ("HMAC with the public key", hmac),
    ] {
        let (code, answer) = status(&server, &token, create).await;
        assert_eq!(
            (code, answer["errors"][0]["extensions"]["code"].as_str()),
            (401, Some("UNAUTHENTICATED")),
            "{what}: {answer}"
        );
    }
    assert_eq!(server.ws.count("svc", "svc_versions").await, versions_before);

    // The provider rotates to a new key; its tokens work once the unknown
    // kid may make the keys be read again (10 s after the last read).
    let (kid_b, _) = keygen(keys.path(), "b");
    provider.restart();
    let rotated = provider.token("bob").await;
    assert!(rotated.len() > 20);
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(rotated.split('.').next().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(header["kid"], kid_b.as_str());
    tokio::time::sleep(Duration::from_secs(11)).await;
    let (code, answer) = status(&server, &rotated, "{ identity { actor roles } }").await;
    assert_eq!(code, 200, "{answer}\n{}", server.log());
    assert_eq!(answer["data"]["identity"]["roles"], json!(["approver"]));
    assert!(!server.log().contains(&alice[20..]), "a token is in the log");
}

#[tokio::test]
async fn a_hostile_kid_is_refused_and_recorded_bounded_and_escaped() {
    let keys = tempfile::tempdir().unwrap();
    let (_, pem_a) = keygen(keys.path(), "a");
    let provider = Provider::start(keys.path(), free_port());
    let ws = Workspace::new("basic");
    let yaml = ws.config(&format!(
        "auth:\n  oidc:\n    issuer: {}\n    audience: {AUDIENCE}\n    roles: {{ dba: admin }}\n",
        provider.issuer()
    ));
    let server = Server::start_in(ws, &yaml, "").await;
    let signed = |kid: &str| {
        let claims = json!({ "sub": "mallory", "iss": provider.issuer(), "aud": AUDIENCE, "exp": now() + 300 });
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(kid.to_string());
        encode(&header, &claims, &EncodingKey::from_rsa_pem(&pem_a).unwrap()).unwrap()
    };
    let query = "{ identity { actor } }";
    // Newlines to forge a log line, ESC to reach a terminal: the first
    // failure from this address, so its row is written.
    let (code, answer) = status(&server, &signed("k2\n2026-01-01 INFO audit outcome=ok\u{1b}[2J"), query).await;
    assert_eq!(code, 401, "{answer}");
    let message = answer["errors"][0]["message"].as_str().unwrap();
    assert!(!message.contains(['\n', '\u{1b}']) && message.contains(r"\n2026-01-01"), "{message}");
    // 60,000 characters: refused unread, not echoed.
    let (code, answer) = status(&server, &signed(&format!("k3{}", "x".repeat(60_000))), query).await;
    assert_eq!(code, 401, "{answer}");
    assert!(answer.to_string().len() < 1_000, "{answer}");
    let log = server.log();
    assert!(!log.contains("\n2026-01-01") && !log.contains('\u{1b}') && !log.contains(&"x".repeat(400)), "{log}");
    let rows = server.ws.rows("svc", "select actor, outcome from svc_audit where action = 'authenticate'").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][0], "unauthenticated:127.0.0.1");
    let outcome = rows[0][1].as_str().unwrap();
    assert!(outcome.contains(r"\n2026-01-01") && !outcome.contains(['\n', '\u{1b}']), "{outcome:?}");
    assert!(outcome.chars().count() <= 301, "{outcome:?}");
}
