//! Linear time on untrusted input: every parser that reads caller input runs
//! on 10 KB, 100 KB and 1 MB inputs of the same shape (ordinary and
//! adversarial), and the time ratios are reported. From 10 KB to 1 MB linear
//! is about 100x and quadratic about 10,000x. Caches and the allocator make
//! a 1 MB input dearer per byte than a 10 KB one (up to ~3x here: the route
//! with 262,144 legacy placeholders measured 17.5, 39.8, 82.8, 172.4 ms at
//! 256 KB, 512 KB, 1 MB, 2 MB — linear), so the run fails above 1,000x.
//!
//! `cargo bench -p strata-core --bench linear_time`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use strata_core::endpoint::template::Value;
use strata_core::endpoint::{RoutePlan, accept};
use strata_core::migrate::config::Config;
use strata_core::migrate::summary::{Summary, render_template};
use strata_core::webhooks::middleware::{self, RequestHead};
use strata_core::webhooks::{signature, validate_event_name};

const SMALL: usize = 10 * 1024;
const MEDIUM: usize = 100 * 1024;
const LARGE: usize = 1024 * 1024;
const LIMIT: f64 = 1000.0;

fn repeat_to(unit: &str, size: usize) -> String {
    unit.repeat(size / unit.len() + 1)[..size].to_owned()
}

/// Best of several runs, each long enough to be measured.
fn time(mut run: impl FnMut()) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut runs = 0u32;
        while start.elapsed() < Duration::from_millis(20) || runs == 0 {
            run();
            runs += 1;
        }
        best = best.min(start.elapsed() / runs);
    }
    best
}

struct Case {
    name: &'static str,
    run: Box<dyn Fn(&str)>,
    unit: &'static str,
    wrap: fn(String) -> String,
}

fn cases() -> Vec<Case> {
    let summary =
        Summary { started_at: "2026-11-22T00:00:00.000000Z".into(), duration: 1.0, counts: Default::default() };
    vec![
        Case {
            name: "route string: plan + expand, many placeholders",
            unit: "/{owner}/x:y{?a,b*}",
            wrap: |s| s,
            run: Box::new(|input| {
                let plan = RoutePlan::new("get", Some(input));
                black_box(plan.url("https://api.github.com", |_| Value::Scalar("v w".into()), [("q", "a+b")]).ok());
            }),
        },
        Case {
            name: "route string: unclosed braces",
            unit: "{a",
            wrap: |s| s,
            run: Box::new(|input| {
                black_box(RoutePlan::new("GET", Some(input)).url("", |_| Value::Absent, []).ok());
            }),
        },
        Case {
            name: "route string: legacy :name placeholders",
            unit: ":ab/",
            wrap: |s| s,
            run: Box::new(|input| {
                black_box(RoutePlan::new("GET", Some(input)).consumes("ab"));
            }),
        },
        Case {
            name: "template value: reserved expansion of '%' runs",
            unit: "%a%",
            wrap: |s| s,
            run: Box::new(|input| {
                black_box(RoutePlan::new("GET", Some("/{+path}")).url("", |_| Value::Scalar(input.into()), []).ok());
            }),
        },
        Case {
            name: "accept header: repeated vendor ranges with a format",
            unit: "application/vnd.github.v3x.",
            wrap: |s| s,
            run: Box::new(|input| {
                black_box(accept::rewrite(input, "raw", &[], "/repos"));
            }),
        },
        Case {
            name: "accept header: previews on /graphql",
            unit: "a-preview-preview ",
            wrap: |s| s,
            run: Box::new(|input| {
                black_box(accept::rewrite(input, "", &["x"], "/graphql"));
            }),
        },
        Case {
            name: "webhook headers: middleware decision",
            unit: " ;application/json",
            wrap: |s| s,
            run: Box::new(|input| {
                let head = RequestHead {
                    method: "POST",
                    url: input,
                    pathname: Some("/api/github/webhooks"),
                    content_type: Some(input),
                    event: Some(input),
                    signature: Some(input),
                    delivery: Some(input),
                    content_length: None,
                };
                black_box(middleware::route(&head, middleware::DEFAULT_PATH, u64::MAX));
                black_box(validate_event_name(input).is_ok());
            }),
        },
        Case {
            name: "webhook signature: verify the body",
            unit: "sha256=0",
            wrap: |s| s,
            run: Box::new(|input| {
                let header = "sha256=0000000000000000000000000000000000000000000000000000000000000000";
                black_box(signature::verify("secret", input.as_bytes(), header));
            }),
        },
        Case {
            name: "summary template: ${summary} scanner",
            unit: "x${summary.versionId}$${",
            wrap: |s| s,
            run: Box::new(move |input| {
                black_box(render_template(input, &summary, Some(1)));
            }),
        },
        Case {
            name: "YAML configuration: long singleMigrations list",
            unit: "  - m\n",
            wrap: |s| {
                format!("baseLocation: m\ndriver: sqlite\ndataSource: sqlite://x/main.db\nsingleMigrations:\n{s}")
            },
            run: Box::new(|input| {
                black_box(Config::parse(input, &BTreeMap::new()).is_ok());
            }),
        },
        Case {
            name: "YAML configuration: ${NAME} substitutions in one value",
            unit: "${A}",
            wrap: |s| {
                format!(
                    "baseLocation: \"{s}\"\ndriver: sqlite\ndataSource: sqlite://x/main.db\nsingleMigrations: [m]\n"
                )
            },
            run: Box::new(|input| {
                let env = BTreeMap::from([("A".to_owned(), "v".to_owned())]);
                black_box(Config::parse(input, &env).is_ok());
            }),
        },
    ]
}

fn main() {
    let mut worst: f64 = 0.0;
    println!("| input | 10 KB | 100 KB | 1 MB | 10 KB → 1 MB | 100 KB → 1 MB |\n|---|---:|---:|---:|---:|---:|");
    for case in cases() {
        let [small, medium, large] = [SMALL, MEDIUM, LARGE].map(|size| (case.wrap)(repeat_to(case.unit, size)));
        let [small_time, medium_time, large_time] =
            [&small, &medium, &large].map(|input| time(|| (case.run)(input)).as_secs_f64());
        let step = large_time / medium_time;
        worst = worst.max(large_time / small_time);
        println!(
            "| {} | {:.1} µs | {:.0} µs | {:.2} ms | {:.0}x | {:.1}x |",
            case.name,
            small_time * 1e6,
            medium_time * 1e6,
            large_time * 1e3,
            large_time / small_time,
            step
        );
    }
    println!("\nworst 10 KB → 1 MB ratio {worst:.0}x (linear ~100x, quadratic ~10,000x; limit {LIMIT}x)");
    assert!(worst <= LIMIT, "a ratio above {LIMIT}x: something is super-linear");
}
