// The body of the fuzz target `plan` (fuzz_targets/plan.rs includes it), also run
// over its seeds and generated inputs in every test build (core/tests/fuzz_targets.rs).

use std::collections::{BTreeMap, HashSet};

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use strata_core::migrate::MigrationType;
use strata_core::migrate::config::Config;
use strata_core::migrate::plan::{Action, AppliedMigration, PlanInput, Target, plan};
use strata_core::migrate::source::{SourceFile, source_migrations};

#[derive(Arbitrary, Debug)]
struct Input {
    files: Vec<(u8, String, Vec<u8>)>,
    recorded: Vec<(u8, String, String, String)>,
    tenants: Vec<String>,
    new_tenant: Option<String>,
    sync: bool,
}

const DIRECTORIES: [&str; 4] = ["ref", "tenants", "scripts/ref", "scripts/tenants"];

fuzz_target!(|input: Input| {
    let yaml = "baseLocation: m\ndriver: sqlite\ndataSource: x\nsingleMigrations: [ref]\ntenantMigrations: [tenants]\n\
                singleScripts: [scripts/ref]\ntenantScripts: [scripts/tenants]\n";
    let config = Config::parse(yaml, &BTreeMap::new()).unwrap();
    let files = input
        .files
        .into_iter()
        .map(|(dir, name, bytes)| SourceFile { directory: DIRECTORIES[dir as usize % 4].to_string(), name, bytes })
        .collect();
    let Ok(sources) = source_migrations(config.directories(), files) else { return };
    let applied: Vec<AppliedMigration> = input
        .recorded
        .into_iter()
        .map(|(kind, file, schema, checksum)| AppliedMigration {
            name: file.rsplit('/').next().unwrap_or_default().to_string(),
            file,
            schema,
            migration_type: MigrationType::from_code(i64::from(kind % 4) + 1).unwrap(),
            checksum,
        })
        .collect();
    let target = match input.new_tenant {
        Some(name) => Target::NewTenant(name),
        None => Target::AllSchemas,
    };
    let action = if input.sync { Action::Sync } else { Action::Apply };
    let planned = plan(PlanInput { sources: &sources, applied: &applied, tenants: &input.tenants, target: &target, action, out_of_order: Default::default() });
    if let Ok(planned) = planned {
        let mut pairs = HashSet::new();
        for step in &planned.steps {
            assert!(pairs.insert((step.migration, step.schema)));
        }
    }
});
