//! `tenantSelectSQL` and `tenantInsertSQL` (or migrator's `tenantSelect`
//! and `tenantInsert`), and `schemaPlaceHolder`: how tenants are listed
//! and added, and what SQL writes for the current schema.

use crate::migrate::config::{
    ConfigError, DEFAULT_SCHEMA_PLACEHOLDER, DEFAULT_TENANT_SELECT_SQL, Environment, RawConfig, Substituter, invalid,
};
use crate::migrate::driver::Driver;

/// The tenant section of a configuration, checked, defaults applied.
pub(super) struct Tenants {
    /// `tenantSelectSQL`, or the default.
    pub(super) select_sql: String,
    /// `tenantInsertSQL`, or the driver's default.
    pub(super) insert_sql: String,
    /// Neither statement was given: the service keeps its own table.
    pub(super) default_table: bool,
    /// `schemaPlaceHolder`, or the default.
    pub(super) schema_placeholder: String,
}

impl Tenants {
    /// Takes the tenant section's properties out of `raw` and checks them
    /// in order: the select statement, the insert statement, the schema
    /// placeholder. The insert statement's default is `driver`'s.
    pub(super) fn parse<E: Environment + ?Sized>(
        sub: &Substituter<'_, E>,
        raw: &mut RawConfig,
        driver: Driver,
    ) -> Result<Tenants, ConfigError> {
        let select =
            sub.either(("tenantSelectSQL", raw.tenant_select_sql.take()), ("tenantSelect", raw.tenant_select.take()))?;
        let insert =
            sub.either(("tenantInsertSQL", raw.tenant_insert_sql.take()), ("tenantInsert", raw.tenant_insert.take()))?;
        if let Some(insert) = &insert {
            names_its_parameter(insert, driver)?;
        }
        let default_table = select.is_none() && insert.is_none();
        let schema_placeholder = schema_placeholder(sub, raw.schema_place_holder.take())?;
        Ok(Tenants {
            select_sql: select.unwrap_or_else(|| DEFAULT_TENANT_SELECT_SQL.to_string()),
            insert_sql: insert.unwrap_or_else(|| driver.default_tenant_insert_sql().to_string()),
            default_table,
            schema_placeholder,
        })
    }
}

/// A tenant insert on SQL Server names its one parameter, `@P1` (the new
/// tenant's name): the engine runs a statement that names none with the
/// parameter left unused — `$1`, PostgreSQL's marker, is a `money`
/// literal there —, so every tenant would be recorded under one value.
/// (PostgreSQL and MySQL refuse a statement whose markers do not match
/// what is bound.)
fn names_its_parameter(insert: &str, driver: Driver) -> Result<(), ConfigError> {
    if driver == Driver::SqlServer && !insert.to_ascii_lowercase().contains("@p1") {
        return Err(invalid(
            "tenantInsertSQL",
            "names no @P1: on SQL Server the new tenant's name is the parameter @P1, as in \
             insert into svc.svc_tenants (name) values (@P1)",
        ));
    }
    Ok(())
}

/// `schemaPlaceHolder`: the default when absent, never empty.
fn schema_placeholder<E: Environment + ?Sized>(
    sub: &Substituter<'_, E>,
    value: Option<String>,
) -> Result<String, ConfigError> {
    let schema_placeholder =
        sub.optional("schemaPlaceHolder", value)?.unwrap_or_else(|| DEFAULT_SCHEMA_PLACEHOLDER.to_string());
    if schema_placeholder.is_empty() {
        return Err(invalid("schemaPlaceHolder", "must not be empty"));
    }
    Ok(schema_placeholder)
}
