//! Every statement the MySQL/MariaDB driver sends of its own accord. A
//! schema is a database. Names are validated by the core and quoted here;
//! values are always bound (`?`).

use strata_core::migrate::ident::quote_mysql;

/// Name of the session lock serialising mutations across service instances.
pub(crate) const LOCK_NAME: &str = "strata.svc";
/// Seconds a mutation waits for the lock before giving up.
pub(crate) const LOCK_TIMEOUT_SECONDS: i64 = 600;

/// Takes the lock: 1 when taken, 0 on timeout.
pub(crate) const GET_LOCK: &str = "select get_lock(?, ?)";
/// Releases the lock.
pub(crate) const RELEASE_LOCK: &str = "select release_lock(?)";

/// The service's database and bookkeeping tables.
pub(crate) const CREATE_SERVICE_TABLES: &str = "
create database if not exists svc;
create table if not exists svc.svc_versions (
    id int auto_increment primary key,
    name text not null,
    created datetime(6) not null,
    request_id varchar(255) not null
) engine = InnoDB default charset = utf8mb4;
create table if not exists svc.svc_migrations (
    id int auto_increment primary key,
    name varchar(255) not null,
    source_dir varchar(255) not null,
    filename varchar(512) not null,
    migration_type int not null,
    db_schema varchar(64) not null,
    created datetime(6) not null,
    contents longtext not null,
    checksum char(64) not null,
    version_id int not null,
    index svc_migrations_version_id (version_id),
    index svc_migrations_filename (filename),
    foreign key (version_id) references svc.svc_versions (id)
) engine = InnoDB default charset = utf8mb4;
";

/// The default tenant table, created only when neither tenant statement is
/// configured.
pub(crate) const CREATE_TENANTS_TABLE: &str = "
create table if not exists svc.svc_tenants (
    id int auto_increment primary key,
    name varchar(64) not null unique,
    created datetime(6) not null default current_timestamp(6)
) engine = InnoDB default charset = utf8mb4;
";

/// `created` as RFC 3339 UTC with microseconds (the service writes UTC).
const CREATED: &str = "date_format(created, '%Y-%m-%dT%H:%i:%s.%fZ')";
/// Parses the RFC 3339 UTC text the service binds.
const PARSE_CREATED: &str = "str_to_date(?, '%Y-%m-%dT%H:%i:%s.%fZ')";

/// Recorded migrations, as the planner needs them.
pub(crate) const SELECT_APPLIED: &str =
    "select filename, name, db_schema, migration_type, checksum from svc.svc_migrations order by id";

/// Inserts a version (its id is the insert id).
pub(crate) fn insert_version() -> String {
    format!("insert into svc.svc_versions (name, created, request_id) values (?, {PARSE_CREATED}, ?)")
}

/// Removes a version that ended up with nothing applied.
pub(crate) const DELETE_EMPTY_VERSION: &str = "delete from svc.svc_versions where id = ? \
    and not exists (select 1 from svc.svc_migrations where version_id = ?)";

/// Records one applied migration, right after it ran.
pub(crate) fn insert_migration() -> String {
    format!(
        "insert into svc.svc_migrations \
         (name, source_dir, filename, migration_type, db_schema, created, contents, checksum, version_id) \
         values (?, ?, ?, ?, ?, {PARSE_CREATED}, ?, ?, ?)"
    )
}

/// All versions.
pub(crate) fn select_versions() -> String {
    format!("select id, name, {CREATED}, request_id from svc.svc_versions order by id")
}

/// Versions in which a file was applied.
pub(crate) fn select_versions_by_file() -> String {
    format!(
        "select id, name, {CREATED}, request_id from svc.svc_versions \
         where id in (select version_id from svc.svc_migrations where filename = ?) order by id"
    )
}

/// One version.
pub(crate) fn select_version() -> String {
    format!("select id, name, {CREATED}, request_id from svc.svc_versions where id = ?")
}

fn migration_columns() -> String {
    format!("id, name, migration_type, source_dir, filename, contents, checksum, db_schema, {CREATED}")
}

/// The migrations of one version.
pub(crate) fn select_version_migrations() -> String {
    format!("select {} from svc.svc_migrations where version_id = ? order by id", migration_columns())
}

/// One recorded migration.
pub(crate) fn select_migration() -> String {
    format!("select {} from svc.svc_migrations where id = ?", migration_columns())
}

/// Creates a tenant's database; fails when it exists.
pub(crate) fn create_database(schema: &str) -> String {
    format!("create database {}", quote_mysql(schema))
}

/// Drops a tenant database this mutation created a moment ago and that is
/// still empty (its tenant row could not be inserted).
pub(crate) fn drop_database(schema: &str) -> String {
    format!("drop database if exists {}", quote_mysql(schema))
}

/// A cheap query touching the service tables, for health.
pub(crate) const PING: &str = "select count(*) from svc.svc_versions where id < 0";
