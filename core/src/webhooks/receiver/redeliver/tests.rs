use crate::webhooks::receiver::redeliver::*;

const PAGE_1: &[u8] = include_bytes!("../../../../../tests/data/redeliver/deliveries-page-1.json");
const PAGE_2: &[u8] = include_bytes!("../../../../../tests/data/redeliver/deliveries-page-2.json");
const KEY: &str = include_str!("../../../../../tests/data/redeliver/test-app-key.pem");
/// 2026-11-23T12:00:00Z.
const NOW_MS: u64 = 1_795_435_200_000;

fn read(vars: &[(&str, &str)]) -> Result<Option<RedeliverConfig>, RedeliverConfigError> {
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    RedeliverConfig::from_vars(move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
}

fn app() -> RedeliverConfig {
    read(&[(APP_ID, "12345"), (APP_PRIVATE_KEY, KEY), (APP_HOOK_ID, "42"), (API_URL, "http://127.0.0.1:9/api/")])
        .unwrap()
        .unwrap()
}

#[test]
fn configurations() {
    assert_eq!(read(&[]).unwrap(), None);
    let config = app();
    assert_eq!(config.scope, Scope::App { hook_id: Some("42".into()) });
    assert_eq!(config.api_url, "http://127.0.0.1:9/api");
    assert_eq!((config.max_per_run, config.max_attempts, config.lookback_ms), (25, 3, 259_200_000));
    assert_eq!(config.hook_id(), Some("42"));
    let debug = format!("{config:?}");
    assert!(debug.contains("App(12345, key <redacted>)") && !debug.contains("MII"), "{debug}");

    let token = read(&[(TOKEN, "ghp_s3cret"), (HOOK, "repos/octo-org/hello.world/hooks/99"), (MAX_PER_RUN, "5")])
        .unwrap()
        .unwrap();
    assert_eq!(token.scope, Scope::Repo { owner: "octo-org".into(), repo: "hello.world".into(), hook_id: "99".into() });
    assert_eq!(token.api_url, "https://api.github.com");
    assert_eq!(token.max_per_run, 5);
    assert_eq!(token.authorization(None), "Bearer ghp_s3cret");
    assert!(!format!("{token:?}").contains("ghp_s3cret"));
    let dot_github = read(&[(TOKEN, "t"), (HOOK, "repos/octo-org/.github/hooks/1")]).unwrap().unwrap();
    assert_eq!(dot_github.scope, Scope::Repo { owner: "octo-org".into(), repo: ".github".into(), hook_id: "1".into() });
    let org = read(&[(TOKEN, "t"), (HOOK, "/orgs/octo-org/hooks/7/")]).unwrap().unwrap();
    assert_eq!(org.scope, Scope::Org { org: "octo-org".into(), hook_id: "7".into() });

    let error = |vars: &[(&str, &str)]| read(vars).unwrap_err().to_string();
    assert_eq!(error(&[(APP_ID, "1")]), "GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY go together");
    assert_eq!(error(&[(APP_ID, "1"), (APP_PRIVATE_KEY, "nope")]), "GITHUB_APP_PRIVATE_KEY is not a PEM private key");
    assert_eq!(
        error(&[(TOKEN, "t")]),
        "GITHUB_TOKEN needs REDELIVER_HOOK (repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID)"
    );
    for hook in [
        "repos/a/hooks/1",
        "repos/a/b/hooks/x",
        "repos/../b/hooks/1",
        "repos/a/./hooks/1",
        "users/a/hooks/1",
        "orgs/a b/hooks/1",
    ] {
        assert_eq!(
            error(&[(TOKEN, "t"), (HOOK, hook)]),
            "REDELIVER_HOOK must be repos/OWNER/REPO/hooks/ID or orgs/ORG/hooks/ID"
        );
    }
    assert_eq!(
        error(&[(APP_ID, "1"), (APP_PRIVATE_KEY, KEY), (HOOK, "orgs/a/hooks/1")]),
        "REDELIVER_HOOK is read with GITHUB_TOKEN, not with the app's credentials"
    );
    assert_eq!(
        error(&[(TOKEN, "t"), (HOOK, "orgs/a/hooks/1"), (API_URL, "ftp://x")]),
        "GITHUB_API_URL must be an absolute http:// or https:// URL with a host"
    );
    assert_eq!(
        error(&[(TOKEN, "t"), (HOOK, "orgs/a/hooks/1"), (LOOKBACK_SECONDS, "300000")]),
        "REDELIVER_LOOKBACK_SECONDS must be a whole number from 60 to 259200"
    );
}

#[test]
fn requests_are_built_by_the_endpoint_rules() {
    let config = app();
    let list = config.list_request("strata-worker/0.1.0", "Bearer j.w.t", None);
    assert_eq!(list.method, "GET");
    assert_eq!(list.url, "http://127.0.0.1:9/api/app/hook/deliveries?per_page=100");
    assert_eq!(list.headers["authorization"], "Bearer j.w.t");
    assert_eq!(list.headers["accept"], "application/vnd.github.v3+json");
    assert_eq!(list.headers["user-agent"], "strata-worker/0.1.0");
    assert_eq!(list.headers["x-github-api-version"], "2022-11-28");
    assert_eq!(list.body, None);
    let next = config.list_request("ua", "Bearer x", Some("v1_1007"));
    assert_eq!(next.url, "http://127.0.0.1:9/api/app/hook/deliveries?per_page=100&cursor=v1_1007");
    let redeliver = config.redeliver_request("ua", "Bearer x", 1006);
    assert_eq!(
        (redeliver.method.as_str(), redeliver.url.as_str()),
        ("POST", "http://127.0.0.1:9/api/app/hook/deliveries/1006/attempts")
    );

    let repo = read(&[(TOKEN, "t"), (HOOK, "repos/octo-org/hello.world/hooks/99")]).unwrap().unwrap();
    assert_eq!(
        repo.list_request("ua", "Bearer t", Some("c")).url,
        "https://api.github.com/repos/octo-org/hello.world/hooks/99/deliveries?per_page=100&cursor=c"
    );
    assert_eq!(
        repo.redeliver_request("ua", "Bearer t", 5).url,
        "https://api.github.com/repos/octo-org/hello.world/hooks/99/deliveries/5/attempts"
    );
    let org = read(&[(TOKEN, "t"), (HOOK, "orgs/octo-org/hooks/7")]).unwrap().unwrap();
    assert_eq!(
        org.redeliver_request("ua", "Bearer t", 5).url,
        "https://api.github.com/orgs/octo-org/hooks/7/deliveries/5/attempts"
    );
}

#[test]
fn link_headers() {
    let link = r#"<https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_1003>; rel="next", <https://api.github.com/app/hook/deliveries?per_page=100>; rel="first""#;
    assert_eq!(next_cursor(Some(link)).as_deref(), Some("v1_1003"));
    assert_eq!(next_cursor(Some(r#"<https://x/?per_page=100>; rel="first""#)), None);
    assert_eq!(next_cursor(Some(r#"<https://x/?cursor=>; rel="next""#)), None);
    assert_eq!(next_cursor(Some("garbage")), None);
    assert_eq!(next_cursor(None), None);
}

#[test]
fn failed_deliveries_within_the_window_are_redelivered_oldest_first() {
    let config = app();
    let mut run = Run::new(&config, NOW_MS);
    let page_1 = parse_page(PAGE_1).unwrap();
    assert_eq!(
        page_1[3],
        Delivery {
            id: 1006,
            guid: "g-timeout".into(),
            delivered_at: "2026-11-23T11:20:00Z".into(),
            redelivery: false,
            status_code: 0,
            event: "push".into(),
            action: None
        }
    );
    assert!(run.add_page(&page_1, true), "the first page is all within the window");
    assert!(!run.add_page(&parse_page(PAGE_2).unwrap(), true), "the second reaches past the window");
    let candidates = run.candidates();
    assert_eq!(
        candidates,
        [
            Candidate { guid: "g-timeout".into(), delivery_id: 1006, event: "push".into(), attempts: 1 },
            Candidate { guid: "g-failed".into(), delivery_id: 1008, event: "issues.opened".into(), attempts: 1 },
        ]
    );
    assert_eq!(candidates[1].log_line(Some(202)), "redelivery requested: issues.opened delivery g-failed (attempt 2)");
    assert_eq!(candidates[0].log_line(Some(422)), "redelivery refused: push delivery g-timeout: HTTP 422");
    assert_eq!(candidates[0].log_line(None), "redelivery not sent: push delivery g-timeout: the API was unreachable");
    let summary = run.summary();
    assert_eq!(summary, Summary { listed: 10, pages: 2, failed: 3, given_up: 1, ..Summary::default() });
    assert_eq!(
        summary.log_line(),
        "redelivery run: 10 attempts listed on 2 page(s); 3 deliveries never succeeded: 0 redelivered, 0 already \
         forwarded here, 0 refused, 1 given up after their attempts, 0 left for the next run"
    );
    assert_eq!(parse_page(b"{\"message\":\"Bad credentials\"}"), Err(ListingError::NotAListing));
}

#[test]
fn the_page_cap_stops_a_run() {
    let config = app();
    let mut run = Run::new(&config, NOW_MS);
    let page = parse_page(PAGE_1).unwrap();
    for _ in 1..MAX_PAGES {
        assert!(run.add_page(&page, true));
    }
    assert!(!run.add_page(&page, true));
    assert!(!Run::new(&config, NOW_MS).add_page(&page, false), "no next page");
    assert!(!Run::new(&config, NOW_MS).add_page(&[], true), "an empty page");
}
