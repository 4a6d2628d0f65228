//! Planner throughput at scale: 10,000 tenant migrations × 1,000 tenants.
//!
//! - `fresh`: nothing recorded yet, so the plan has 10,000,000 steps.
//! - `steady`: everything recorded but the 10 newest migrations, so the
//!   planner indexes 9,990,000 recorded rows and plans 10,000 steps.
//!
//! Run with `cargo bench -p strata-core --bench planner`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_core::migrate::MigrationType;
use strata_core::migrate::plan::{Action, AppliedMigration, PlanInput, Target, plan};
use strata_core::migrate::source::SourceMigration;

const MIGRATIONS: usize = 10_000;
const TENANTS: usize = 1_000;
const NEW: usize = 10;

fn sources() -> Vec<SourceMigration> {
    (0..MIGRATIONS)
        .map(|i| {
            let name = format!("{i:08}.sql");
            let contents = format!("create table {{schema}}.t{i} (id integer);");
            SourceMigration::plain("tenants", &name, MigrationType::TenantMigration, &contents)
        })
        .collect()
}

fn tenants() -> Vec<String> {
    (0..TENANTS).map(|i| format!("tenant{i:04}")).collect()
}

fn recorded(sources: &[SourceMigration], tenants: &[String]) -> Vec<AppliedMigration> {
    let mut rows = Vec::with_capacity((MIGRATIONS - NEW) * TENANTS);
    for migration in &sources[..MIGRATIONS - NEW] {
        for tenant in tenants {
            rows.push(AppliedMigration {
                file: migration.file.clone(),
                name: migration.name.clone(),
                schema: tenant.clone(),
                migration_type: migration.migration_type,
                checksum: migration.checksum.clone(),
            });
        }
    }
    rows
}

fn planner(c: &mut Criterion) {
    let sources = sources();
    let tenants = tenants();
    let mut group = c.benchmark_group("plan 10000 migrations x 1000 tenants");
    group.sample_size(10);

    let fresh = PlanInput {
        sources: &sources,
        applied: &[],
        tenants: &tenants,
        target: &Target::AllSchemas,
        action: Action::Apply,
        out_of_order: Default::default(),
    };
    group.bench_function("fresh (10M steps)", |b| {
        b.iter(|| {
            let planned = plan(black_box(fresh)).unwrap();
            assert_eq!(planned.steps.len(), MIGRATIONS * TENANTS);
            planned
        })
    });

    let applied = recorded(&sources, &tenants);
    let steady = PlanInput { applied: &applied, ..fresh };
    group.bench_function("steady (9.99M recorded, 10k steps)", |b| {
        b.iter(|| {
            let planned = plan(black_box(steady)).unwrap();
            assert_eq!(planned.steps.len(), NEW * TENANTS);
            planned
        })
    });
    group.finish();
}

criterion_group!(benches, planner);
criterion_main!(benches);
