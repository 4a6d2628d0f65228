//! The GraphQL API of `/v2/service`: queries and mutations of the spec.

mod types;

use std::sync::Arc;

use async_graphql::{Context, EmptySubscription, Object, Result, Schema};
use strata_core::plan::Target;

use crate::error::{AppError, graphql_error};
use crate::http::RequestId;
use crate::service::{CreateRequest, Service};
use types::{
    ActionDto, CreateResultsDto, DbMigrationDto, MigrationInterface, SourceMigrationDto, SourceMigrationFilters,
    TenantDto, TenantInput, VersionDto, VersionInput,
};

/// The API schema.
pub type ApiSchema = Schema<Query, Mutation, EmptySubscription>;

/// Deepest query nesting accepted (introspection needs about 13).
const MAX_DEPTH: usize = 32;

/// Builds the schema; the service is available to every resolver.
pub fn build_schema(service: Arc<Service>) -> ApiSchema {
    Schema::build(Query, Mutation, EmptySubscription)
        .register_output_type::<MigrationInterface>()
        .limit_depth(MAX_DEPTH)
        .data(service)
        .finish()
}

fn service<'a>(ctx: &Context<'a>) -> Result<&'a Arc<Service>> {
    ctx.data::<Arc<Service>>()
}

fn request_id(ctx: &Context<'_>) -> String {
    ctx.data_opt::<RequestId>().map(|id| id.0.clone()).unwrap_or_default()
}

fn not_blank(field: &str, value: &str) -> Result<(), AppError> {
    if value.trim().is_empty() {
        return Err(AppError::InvalidInput(format!("{field} must not be empty")));
    }
    Ok(())
}

/// Queries.
pub struct Query;

#[Object]
impl Query {
    /// Source migrations, optionally filtered.
    async fn source_migrations(
        &self,
        ctx: &Context<'_>,
        filters: Option<SourceMigrationFilters>,
    ) -> Result<Vec<SourceMigrationDto>> {
        let filters = filters.unwrap_or_default();
        let all = service(ctx)?.source_migrations().await.map_err(graphql_error)?;
        Ok(all.into_iter().filter(|m| filters.matches(m)).map(SourceMigrationDto::from).collect())
    }

    /// One source migration by `file`.
    async fn source_migration(&self, ctx: &Context<'_>, file: String) -> Result<Option<SourceMigrationDto>> {
        let all = service(ctx)?.source_migrations().await.map_err(graphql_error)?;
        Ok(all.into_iter().find(|m| m.file == file).map(SourceMigrationDto::from))
    }

    /// Versions; with `file`, only those in which that file was applied.
    async fn versions(&self, ctx: &Context<'_>, file: Option<String>) -> Result<Vec<VersionDto>> {
        let rows = service(ctx)?.database().versions(file.as_deref()).await.map_err(graphql_error)?;
        Ok(rows.into_iter().map(VersionDto::from).collect())
    }

    /// One version.
    async fn version(&self, ctx: &Context<'_>, id: i32) -> Result<Option<VersionDto>> {
        let row = service(ctx)?.database().version(i64::from(id)).await.map_err(graphql_error)?;
        Ok(row.map(VersionDto::from))
    }

    /// One recorded migration.
    async fn db_migration(&self, ctx: &Context<'_>, id: i32) -> Result<Option<DbMigrationDto>> {
        let row = service(ctx)?.database().db_migration(i64::from(id)).await.map_err(graphql_error)?;
        Ok(row.map(DbMigrationDto::from))
    }

    /// Tenants.
    async fn tenants(&self, ctx: &Context<'_>) -> Result<Vec<TenantDto>> {
        let names = service(ctx)?.database().tenants().await.map_err(graphql_error)?;
        Ok(names.into_iter().map(|name| TenantDto { name }).collect())
    }
}

/// Mutations.
pub struct Mutation;

#[Object]
impl Mutation {
    /// Applies (or records) every eligible migration and script as a new version.
    async fn create_version(&self, ctx: &Context<'_>, input: VersionInput) -> Result<CreateResultsDto> {
        not_blank("versionName", &input.version_name).map_err(graphql_error)?;
        let request = CreateRequest {
            version_name: input.version_name,
            target: Target::AllSchemas,
            action: input.action.unwrap_or(ActionDto::Apply).into(),
            dry_run: input.dry_run.unwrap_or(false),
            request_id: request_id(ctx),
        };
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }

    /// Creates a tenant and applies the tenant migrations and scripts to it, as a new version.
    async fn create_tenant(&self, ctx: &Context<'_>, input: TenantInput) -> Result<CreateResultsDto> {
        not_blank("versionName", &input.version_name).map_err(graphql_error)?;
        let request = CreateRequest {
            version_name: input.version_name,
            target: Target::NewTenant(input.tenant_name),
            action: input.action.unwrap_or(ActionDto::Apply).into(),
            dry_run: input.dry_run.unwrap_or(false),
            request_id: request_id(ctx),
        };
        Ok(service(ctx)?.create(request).await.map_err(graphql_error)?.into())
    }
}
