//! The fleet matrix's wire types (`Fleet`, `FleetTenant`, `MigrationState`;
//! added to the spec's schema for the console): tenants × tenant
//! migrations, a tenant's row paged by name, and the guard that keeps a
//! per-cell answer from growing with the fleet.

use async_graphql::{ComplexObject, Context, Enum, Result, SimpleObject};
use strata_core::migrate::report;
use strata_core::migrate::report::fleet_rows::{self, RowFilter, Tally};

use crate::error::{AppError, graphql_error};
use crate::graphql::one_by_one::OneByOne;

/// Where a tenant stands with a tenant migration (`MigrationState`, added).
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
#[graphql(name = "MigrationState", rename_items = "PascalCase")]
pub(crate) enum MigrationStateDto {
    /// Recorded, and unchanged since.
    Applied,
    /// Not recorded: the next version applies it.
    Pending,
    /// Recorded, but the file changed since.
    Drifted,
    /// Not known now: the tenant's shard did not answer.
    Unknown,
}

/// One tenant's row of the fleet (`FleetTenant`, added).
#[derive(SimpleObject)]
#[graphql(name = "FleetTenant", complex)]
pub(crate) struct FleetTenantDto {
    name: String,
    /// The shard it lives on (null on one server).
    shard: Option<String>,
    /// Its states in one string, a letter per file of `Fleet.files`: `A`
    /// applied, `P` pending, `D` drifted, `U` unknown. One value per tenant
    /// where `states` has one per cell: what a client reading tens of
    /// thousands of tenants asks for (the console does).
    cells: String,
}

#[ComplexObject]
impl FleetTenantDto {
    /// One state per file of `Fleet.files` (`cells`, a value each).
    async fn states(&self) -> OneByOne<MigrationStateDto> {
        let state = |letter| match report::CellState::from_letter(letter) {
            Some(report::CellState::Applied) => MigrationStateDto::Applied,
            Some(report::CellState::Pending) => MigrationStateDto::Pending,
            Some(report::CellState::Drifted) => MigrationStateDto::Drifted,
            Some(report::CellState::Unknown) | None => MigrationStateDto::Unknown,
        };
        OneByOne(self.cells.chars().map(state).collect())
    }
}

/// Tenants × tenant migrations (`Fleet`, added: the console's matrix).
#[derive(SimpleObject)]
#[graphql(name = "Fleet", complex)]
pub(crate) struct FleetDto {
    /// The tenant migration files, in application order.
    files: Vec<String>,
    /// Every tenant's row, in order of name.
    #[graphql(skip)]
    rows: Vec<FleetTenantDto>,
}

/// The most `FleetTenant.states` values one answer holds: a value is about
/// 190 bytes of the service's memory while the answer is built (the whole
/// fleet's at 50,000 tenants × 20 files was 187 MiB), where `cells` holds a
/// tenant's in one string.
pub(crate) const MAX_STATES_PER_ANSWER: usize = 100_000;

/// Tenants counted by where their rows stand (`FleetTally`, added): each
/// counts once in `behind`, `drifted` and `unknown` however many of its
/// files are.
#[derive(SimpleObject)]
#[graphql(name = "FleetTally")]
pub(crate) struct FleetTallyDto {
    /// The tenants counted.
    tenants: u64,
    /// Those with a pending file.
    behind: u64,
    /// Those with a file changed since it was applied.
    drifted: u64,
    /// Those not known now (their shard did not answer).
    unknown: u64,
}

impl From<Tally> for FleetTallyDto {
    fn from(tally: Tally) -> Self {
        FleetTallyDto { tenants: tally.tenants, behind: tally.behind, drifted: tally.drifted, unknown: tally.unknown }
    }
}

/// One shard's tenants counted (`FleetShardTally`, added).
#[derive(SimpleObject)]
#[graphql(name = "FleetShardTally")]
pub(crate) struct FleetShardTallyDto {
    /// The shard's name.
    shard: String,
    /// Its tenants, counted.
    #[graphql(flatten)]
    tally: FleetTallyDto,
}

#[ComplexObject]
impl FleetDto {
    /// The tenants in order of name, each with its state for each file:
    /// every one, or a page — `first` of them, those after the tenant named
    /// `after` (the last one of the page before; it need not exist any
    /// more), skipping `offset` more (a scroller's jump; without `after`,
    /// from the first) — of those whose name contains `nameContains` and
    /// who live on `shard` (both ignoring case). Asking for `states` of more
    /// than 100,000 cells at once is refused (`INVALID_INPUT`): ask for
    /// `cells`, or a page.
    async fn tenants(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        offset: Option<i32>,
        name_contains: Option<String>,
        shard: Option<String>,
    ) -> Result<OneByOne<&FleetTenantDto>> {
        let filter = RowFilter::new(name_contains.as_deref(), shard.as_deref());
        let kept: Vec<&FleetTenantDto> = self.kept(filter).collect();
        let from = crate::graphql::page::page(&kept, |row| row.name.as_str(), None, after.as_deref())?.start;
        let skip = match offset {
            None => 0,
            Some(offset) => usize::try_from(offset).map_err(|_| {
                graphql_error(AppError::InvalidInput(format!("`offset` is {offset}: it counts tenants, 0 or more")))
            })?,
        };
        let rest = &kept[from.saturating_add(skip).min(kept.len())..];
        let page = &rest[crate::graphql::page::page(rest, |row| row.name.as_str(), first, None)?];
        let states = page.len().saturating_mul(self.files.len());
        if states > MAX_STATES_PER_ANSWER && ctx.look_ahead().field("states").exists() {
            return Err(graphql_error(AppError::InvalidInput(format!(
                "`states` for {} tenants × {} files is {states} values, over {MAX_STATES_PER_ANSWER} in one answer: \
                 ask for `cells` (a letter per file), or for a page of tenants with `first` and `after`",
                page.len(),
                self.files.len()
            ))));
        }
        Ok(OneByOne(page.to_vec()))
    }

    /// The tenants `tenants` answers with the same `nameContains` and
    /// `shard`, counted: all of them, those behind, drifted and unknown.
    async fn tally(&self, name_contains: Option<String>, shard: Option<String>) -> FleetTallyDto {
        let mut tally = Tally::default();
        for row in self.kept(RowFilter::new(name_contains.as_deref(), shard.as_deref())) {
            tally.add_letters(&row.cells);
        }
        tally.into()
    }

    /// Each shard's tenants counted, in order of the shard's name (none on
    /// one server).
    async fn shards(&self) -> Vec<FleetShardTallyDto> {
        fleet_rows::tally_by_shard(self.rows.iter().map(|row| (row.shard.as_deref(), row.cells.as_str())))
            .into_iter()
            .map(|(shard, tally)| FleetShardTallyDto { shard, tally: tally.into() })
            .collect()
    }
}

impl FleetDto {
    /// The rows `filter` keeps, in order of name.
    fn kept(&self, filter: RowFilter) -> impl Iterator<Item = &FleetTenantDto> {
        self.rows.iter().filter(move |row| filter.keeps(&row.name, row.shard.as_deref()))
    }

    /// The matrix, its rows in order of name, each tenant with its shard
    /// (`shard_of`: tenant → shard).
    pub(crate) fn new(matrix: report::FleetMatrix, shard_of: &std::collections::HashMap<String, String>) -> Self {
        let mut rows: Vec<FleetTenantDto> = matrix
            .tenants
            .into_iter()
            .map(|(name, cells)| {
                let shard = shard_of.get(&name).cloned();
                FleetTenantDto { name, shard, cells: report::letters(&cells) }
            })
            .collect();
        rows.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        FleetDto { files: matrix.files, rows }
    }
}

#[cfg(test)]
mod tests {
    use async_graphql::{EmptyMutation, EmptySubscription, Object, Schema};
    use serde_json::json;
    use strata_core::migrate::report::{CellState, FleetMatrix};

    use super::{FleetDto, MAX_STATES_PER_ANSWER};

    struct Root(FleetDto);

    #[Object]
    impl Root {
        async fn fleet(&self) -> &FleetDto {
            &self.0
        }
    }

    /// A fleet of `tenants` (named `t00000`…, listed last first) × `files`,
    /// the first file applied everywhere and the others pending.
    fn schema(tenants: usize, files: usize) -> Schema<Root, EmptyMutation, EmptySubscription> {
        let row = |i: usize| {
            let mut cells = vec![CellState::Pending; files];
            cells[0] = CellState::Applied;
            (format!("t{i:05}"), cells)
        };
        let matrix = FleetMatrix {
            files: (1..=files).map(|i| format!("tenants/{i:03}.sql")).collect(),
            tenants: (0..tenants).rev().map(row).collect(),
        };
        Schema::new(Root(FleetDto::new(matrix, &Default::default())), EmptyMutation, EmptySubscription)
    }

    async fn answer(schema: &Schema<Root, EmptyMutation, EmptySubscription>, query: &str) -> serde_json::Value {
        let response = schema.execute(query).await;
        assert!(response.errors.is_empty(), "{:?}", response.errors);
        response.data.into_json().unwrap()
    }

    #[tokio::test]
    async fn tenants_come_in_order_of_name_and_page_by_the_last_name() {
        let schema = schema(5, 2);
        let all = answer(&schema, "{ fleet { files tenants { name cells states } } }").await;
        assert_eq!(all["fleet"]["files"], json!(["tenants/001.sql", "tenants/002.sql"]));
        assert_eq!(
            all["fleet"]["tenants"][0],
            json!({ "name": "t00000", "cells": "AP", "states": ["Applied", "Pending"] })
        );
        let names = |page: &serde_json::Value| {
            page["fleet"]["tenants"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(names(&all), ["t00000", "t00001", "t00002", "t00003", "t00004"]);
        let page = answer(&schema, r#"{ fleet { tenants(first: 2, after: "t00001") { name } } }"#).await;
        assert_eq!(names(&page), ["t00002", "t00003"]);
        // The cursor's tenant may be gone: the page starts at the next name.
        let page = answer(&schema, r#"{ fleet { tenants(first: 9, after: "t00002x") { name } } }"#).await;
        assert_eq!(names(&page), ["t00003", "t00004"]);
        let page = answer(&schema, r#"{ fleet { tenants(after: "t00004") { name } } }"#).await;
        assert_eq!(names(&page), Vec::<serde_json::Value>::new());
        let page = answer(&schema, "{ fleet { tenants(first: 0) { name } } }").await;
        assert_eq!(names(&page), Vec::<serde_json::Value>::new());
    }

    #[tokio::test]
    async fn a_search_and_an_offset_page_the_kept_rows_and_tallies_count_them() {
        // t00000…t00009 on shards "a" (even) and "b" (odd); every tenant but
        // t00003 has its second file pending, t00004 a drifted first file.
        let row = |i: usize| {
            let cells = match i {
                3 => vec![CellState::Applied, CellState::Applied],
                4 => vec![CellState::Drifted, CellState::Pending],
                _ => vec![CellState::Applied, CellState::Pending],
            };
            (format!("t{i:05}"), cells)
        };
        let matrix = FleetMatrix {
            files: vec!["tenants/1.sql".into(), "tenants/2.sql".into()],
            tenants: (0..10).map(row).collect(),
        };
        let shard_of = (0..10).map(|i| (format!("t{i:05}"), if i % 2 == 0 { "a" } else { "b" }.to_owned())).collect();
        let schema = Schema::new(Root(FleetDto::new(matrix, &shard_of)), EmptyMutation, EmptySubscription);
        let names = |answer: &serde_json::Value| {
            answer["fleet"]["tenants"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        let page = answer(&schema, "{ fleet { tenants(first: 3, offset: 4) { name } } }").await;
        assert_eq!(names(&page), ["t00004", "t00005", "t00006"]);
        let page = answer(&schema, r#"{ fleet { tenants(first: 2, after: "t00001", offset: 2) { name } } }"#).await;
        assert_eq!(names(&page), ["t00004", "t00005"], "the offset counts from the cursor");
        let page = answer(&schema, r#"{ fleet { tenants(shard: "B", offset: 3) { name shard } } }"#).await;
        assert_eq!(names(&page), ["t00007", "t00009"]);
        assert_eq!(page["fleet"]["tenants"][0]["shard"], "b");
        let page = answer(
            &schema,
            r#"{ fleet { tenants(nameContains: "T0000", shard: "a", first: 2, offset: 1) { name } } }"#,
        )
        .await;
        assert_eq!(names(&page), ["t00002", "t00004"]);
        let page = answer(&schema, "{ fleet { tenants(offset: 99) { name } } }").await;
        assert!(names(&page).is_empty());
        let counted = answer(
            &schema,
            r#"{ fleet { tally { tenants behind drifted unknown } a: tally(shard: "a") { tenants behind drifted }
                 none: tally(nameContains: "x") { tenants } shards { shard tenants behind drifted unknown } } }"#,
        )
        .await;
        assert_eq!(counted["fleet"]["tally"], json!({ "tenants": 10, "behind": 9, "drifted": 1, "unknown": 0 }));
        assert_eq!(counted["fleet"]["a"], json!({ "tenants": 5, "behind": 5, "drifted": 1 }));
        assert_eq!(counted["fleet"]["none"], json!({ "tenants": 0 }));
        assert_eq!(
            counted["fleet"]["shards"],
            json!([
                { "shard": "a", "tenants": 5, "behind": 5, "drifted": 1, "unknown": 0 },
                { "shard": "b", "tenants": 5, "behind": 4, "drifted": 0, "unknown": 0 },
            ])
        );
        let response = schema.execute("{ fleet { tenants(offset: -1) { name } } }").await;
        let error = serde_json::to_value(&response.errors).unwrap();
        assert_eq!(error[0]["extensions"]["code"], "INVALID_INPUT", "{error}");
        assert!(error[0]["message"].as_str().unwrap().contains("`offset` is -1"), "{error}");
    }

    #[tokio::test]
    async fn a_negative_page_size_is_invalid_input() {
        let response = schema(2, 1).execute("{ fleet { tenants(first: -1) { name } } }").await;
        let error = serde_json::to_value(&response.errors).unwrap();
        assert_eq!(error[0]["extensions"]["code"], "INVALID_INPUT", "{error}");
        assert!(error[0]["message"].as_str().unwrap().contains("`first` is -1"), "{error}");
    }

    #[tokio::test]
    async fn states_over_the_limit_are_refused_and_cells_or_a_page_are_answered() {
        let files = 20;
        let tenants = MAX_STATES_PER_ANSWER / files + 1;
        let schema = schema(tenants, files);
        let response = schema.execute("{ fleet { tenants { name states } } }").await;
        let error = serde_json::to_value(&response.errors).unwrap();
        assert_eq!(error[0]["extensions"]["code"], "INVALID_INPUT", "{error}");
        let message = error[0]["message"].as_str().unwrap();
        assert!(message.contains(&format!("{tenants} tenants × 20 files is {} values", tenants * files)), "{message}");
        assert!(message.contains("`cells`") && message.contains("`first`"), "{message}");
        // The same fleet's cells, and its states a page at a time.
        let cells = answer(&schema, "{ fleet { tenants { cells } } }").await;
        assert_eq!(cells["fleet"]["tenants"].as_array().unwrap().len(), tenants);
        let first = MAX_STATES_PER_ANSWER / files;
        let page = answer(&schema, &format!("{{ fleet {{ tenants(first: {first}) {{ states }} }} }}")).await;
        assert_eq!(page["fleet"]["tenants"].as_array().unwrap().len(), first);
    }
}
