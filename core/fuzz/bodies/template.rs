// The body of the fuzz target `template` (fuzz_targets/template.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::summary::{Summary, render_template, validate_template};

fuzz_target!(|input: (&str, Option<i64>, f64)| {
    let (template, version, duration) = input;
    let _ = validate_template(template);
    let summary = Summary { started_at: "2026-01-01T00:00:00.000000Z".into(), duration, counts: Default::default() };
    let _ = render_template(template, &summary, version);
});
