// The body of the fuzz target `config` (fuzz_targets/config.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use strata_core::migrate::config::Config;

fuzz_target!(|text: &str| {
    let env: BTreeMap<String, String> = [("A".to_string(), "x".to_string())].into();
    if let Ok(config) = Config::parse(text, &env) {
        let rendered = config.render_redacted();
        let again = Config::parse(&rendered, &BTreeMap::new()).expect("the redacted rendering parses");
        assert_eq!(again.base_location, config.base_location);
        assert_eq!(again.port, config.port);
        assert_eq!(again.single_migrations, config.single_migrations);
    }
});
