use super::super::tests::{object, remove, set, sql};
use super::super::{Catalog, Plan, plan as plan_for};
use super::widens;
use crate::migrate::driver::Driver;
use crate::migrate::fingerprint::CatalogObject;

/// A tenant's catalog as SQL Server's desired reading gives it: `users`
/// (an identity key the server named, a default, a named unique index, a
/// named check), `orders` with a foreign key to it, a view, a procedure
/// and a trigger; `edit` changes the objects first.
fn shop(schema: &str, edit: impl FnOnce(&mut Vec<CatalogObject>)) -> Catalog {
    let mut objects = vec![
        object("relation", "users", "table"),
        object("column", "users.id", "int identity(1, 1) not null"),
        object("column", "users.email", "nvarchar(64) not null"),
        object("column", "users.credit", "decimal(10, 2) not null"),
        object("column order", "users", "id"),
        object("column order", "users", "email"),
        object("column order", "users", "credit"),
        object("default", "users.credit", "((0))"),
        object("index", "users.primary key", "primary key clustered"),
        object("index column", "users.primary key.k001", "[id]"),
        object("index", "users.users_email", "unique nonclustered index"),
        object("index column", "users.users_email.k001", "[email] desc"),
        object("index column", "users.users_email.i002", "[credit]"),
        object("check", "users.credit_positive", "([credit]>=(0))"),
        object("relation", "orders", "table"),
        object("column", "orders.id", "bigint not null"),
        object("column", "orders.user_id", "int null"),
        object("column order", "orders", "id"),
        object("column order", "orders", "user_id"),
        object("index", "orders.primary key", "primary key clustered named [orders_pk]"),
        object("index column", "orders.primary key.k001", "[id]"),
        object(
            "foreign key",
            "orders.orders_user",
            &format!("references [{schema}].[users] on delete cascade on update no action"),
        ),
        object("foreign key column", "orders.orders_user.001", "[user_id] -> [id]"),
        object("relation", "big_orders", "view"),
        object(
            "view",
            "big_orders",
            &format!("create view {schema}.big_orders as select id from {schema}.orders where id > 10"),
        ),
        object(
            "routine",
            "credit_of",
            &format!("create procedure {schema}.credit_of @id int as select credit from {schema}.users where id = @id"),
        ),
        object(
            "trigger",
            "orders_touch",
            &format!("create trigger {schema}.orders_touch on {schema}.orders after insert as set nocount on"),
        ),
    ];
    edit(&mut objects);
    Catalog::new(schema, &objects)
}

fn desired() -> Catalog {
    shop("strata_desired", |_| {})
}

fn plan(live: &Catalog) -> Plan {
    plan_for(Driver::SqlServer, &desired(), live)
}

#[test]
fn a_tenant_made_from_the_same_file_needs_nothing() {
    assert!(plan(&shop("t1", |_| {})).is_empty(), "{:?}", plan(&shop("t1", |_| {})));
}

#[test]
fn an_empty_schema_gets_every_table_with_its_keys_then_indexes_keys_and_modules() {
    let plan = plan(&Catalog::new("t1", &[]));
    assert_eq!(
        sql(&plan),
        [
            "CREATE TABLE {schema}.[orders] (\n    [id] bigint not null,\n    [user_id] int null,\n    \
             CONSTRAINT [orders_pk] PRIMARY KEY CLUSTERED ([id])\n)",
            "CREATE TABLE {schema}.[users] (\n    [id] int identity(1, 1) not null,\n    [email] nvarchar(64) not null,\n    \
             [credit] decimal(10, 2) not null DEFAULT ((0)),\n    PRIMARY KEY CLUSTERED ([id]),\n    \
             CONSTRAINT [credit_positive] CHECK ([credit]>=(0))\n)",
            "ALTER TABLE {schema}.[orders] ADD CONSTRAINT [orders_user] FOREIGN KEY ([user_id]) REFERENCES \
             [{schema}].[users] ([id]) ON DELETE CASCADE ON UPDATE NO ACTION",
            "CREATE UNIQUE NONCLUSTERED INDEX [users_email] ON {schema}.[users] ([email] desc) INCLUDE ([credit])",
            "EXEC (N'create procedure {schema}.credit_of @id int as select credit from {schema}.users where id = @id')",
            "EXEC (N'create view {schema}.big_orders as select id from {schema}.orders where id > 10')",
            "EXEC (N'create trigger {schema}.orders_touch on {schema}.orders after insert as set nocount on')",
        ]
    );
    assert!(!plan.destructive());
    // And back: everything dropped, dependents first, tables last.
    let back = plan_for(Driver::SqlServer, &Catalog::new("strata_desired", &[]), &shop("t1", |_| {}));
    assert_eq!(
        sql(&back),
        [
            "DROP TRIGGER {schema}.[orders_touch]",
            "DROP VIEW {schema}.[big_orders]",
            "DROP PROCEDURE {schema}.[credit_of]",
            "DROP TABLE {schema}.[orders]",
            "DROP TABLE {schema}.[users]",
        ]
    );
    assert!(back.destructive());
}

#[test]
fn columns_are_added_widened_narrowed_and_dropped_with_their_defaults() {
    let live = shop("t1", |o| {
        remove(o, "column", "users.credit");
        remove(o, "default", "users.credit");
        remove(o, "index column", "users.users_email.i002");
        remove(o, "check", "users.credit_positive");
        set(o, "column", "users.email", "nvarchar(40) not null");
        set(o, "column", "orders.id", "int not null");
        o.push(object("column", "orders.note", "varchar(max) null"));
        o.push(object("default", "orders.note", "('')"));
    });
    let plan = plan(&live);
    let includes = "DROP INDEX [users_email] ON {schema}.[users]";
    let dropped_default = "DECLARE @drop_1 sysname = (SELECT d.name FROM sys.default_constraints d JOIN sys.columns c ON \
                           c.object_id = d.parent_object_id AND c.column_id = d.parent_column_id WHERE \
                           d.parent_object_id = OBJECT_ID(N'{schema}.[orders]') AND c.name = N'note'); EXEC (N'ALTER \
                           TABLE {schema}.[orders] DROP CONSTRAINT ' + QUOTENAME(@drop_1))";
    assert_eq!(
        sql(&plan),
        [
            dropped_default,
            includes,
            "ALTER TABLE {schema}.[orders] ALTER COLUMN [id] bigint not null",
            "ALTER TABLE {schema}.[users] ALTER COLUMN [email] nvarchar(64) not null",
            "ALTER TABLE {schema}.[users] ADD [credit] decimal(10, 2) not null DEFAULT ((0))",
            "ALTER TABLE {schema}.[users] ADD CONSTRAINT [credit_positive] CHECK ([credit]>=(0))",
            "CREATE UNIQUE NONCLUSTERED INDEX [users_email] ON {schema}.[users] ([email] desc) INCLUDE ([credit])",
            "ALTER TABLE {schema}.[orders] DROP COLUMN [note]",
        ]
    );
    let destructive: Vec<bool> = plan.steps.iter().map(|s| s.destructive).collect();
    assert_eq!(destructive, [false, false, false, false, false, false, false, true]);
    // Narrowed back: the type change loses data.
    let narrowed = plan_for(Driver::SqlServer, &live, &shop("t2", |_| {}));
    let email = narrowed.steps.iter().find(|s| s.sql.contains("ALTER COLUMN [email]")).unwrap();
    assert!(email.destructive, "{narrowed:?}");
}

#[test]
fn a_default_that_differs_is_dropped_by_its_live_name_and_made_again() {
    let plan = plan(&shop("t1", |o| set(o, "default", "users.credit", "((1))")));
    assert_eq!(
        sql(&plan),
        [
            "DECLARE @drop_1 sysname = (SELECT d.name FROM sys.default_constraints d JOIN sys.columns c ON \
             c.object_id = d.parent_object_id AND c.column_id = d.parent_column_id WHERE d.parent_object_id = \
             OBJECT_ID(N'{schema}.[users]') AND c.name = N'credit'); EXEC (N'ALTER TABLE {schema}.[users] DROP \
             CONSTRAINT ' + QUOTENAME(@drop_1))",
            "ALTER TABLE {schema}.[users] ADD DEFAULT ((0)) FOR [credit]",
        ]
    );
}

#[test]
fn keys_checks_and_foreign_keys_the_server_named_are_found_where_the_plan_runs() {
    let live = shop("t1", |o| {
        set(o, "index column", "users.primary key.k001", "[email]");
        o.push(object("index", "users.unique 4", "unique nonclustered"));
        o.push(object("index column", "users.unique 4.k001", "[credit]"));
        o.push(object("check", "users.check ([email]<>'')", "([email]<>'')"));
        set(o, "foreign key", "orders.orders_user", "references [t1].[users] on delete no action on update no action");
        o.push(object(
            "foreign key",
            "orders.references users user_id",
            "references [t1].[users] on delete no action on update no action",
        ));
        o.push(object("foreign key column", "orders.references users user_id.001", "[user_id] -> [id]"));
    });
    let steps = sql(&plan(&live)).into_iter().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(steps.len(), 7, "{steps:#?}");
    // The foreign keys first (the key they reference is made again).
    assert_eq!(steps[0], "ALTER TABLE {schema}.[orders] DROP CONSTRAINT [orders_user]");
    assert_eq!(
        steps[1],
        "DECLARE @drop_1 sysname = (SELECT f.name FROM sys.foreign_keys f JOIN sys.foreign_key_columns fc ON \
         fc.constraint_object_id = f.object_id AND fc.constraint_column_id = 1 JOIN sys.columns c ON c.object_id = \
         fc.parent_object_id AND c.column_id = fc.parent_column_id WHERE f.parent_object_id = \
         OBJECT_ID(N'{schema}.[orders]') AND c.name = N'user_id'); EXEC (N'ALTER TABLE {schema}.[orders] DROP \
         CONSTRAINT ' + QUOTENAME(@drop_1))"
    );
    let found = |at: usize, lookup: &str, variable: &str| {
        assert!(steps[at].contains(lookup), "{}", steps[at]);
        assert!(steps[at].ends_with(&format!("DROP CONSTRAINT ' + QUOTENAME({variable}))")), "{}", steps[at]);
    };
    found(
        2,
        "(SELECT name FROM sys.key_constraints WHERE parent_object_id = OBJECT_ID(N'{schema}.[users]') AND type = 'PK')",
        "@drop_2",
    );
    found(
        3,
        "JOIN sys.indexes i ON i.object_id = kc.parent_object_id AND i.name = kc.name WHERE kc.parent_object_id = \
         OBJECT_ID(N'{schema}.[users]') AND i.index_id = 4)",
        "@drop_3",
    );
    found(
        4,
        "FROM sys.check_constraints WHERE parent_object_id = OBJECT_ID(N'{schema}.[users]') AND definition = \
         N'([email]<>'''')')",
        "@drop_4",
    );
    assert_eq!(steps[5], "ALTER TABLE {schema}.[users] ADD PRIMARY KEY CLUSTERED ([id])");
    assert_eq!(
        steps[6],
        "ALTER TABLE {schema}.[orders] ADD CONSTRAINT [orders_user] FOREIGN KEY ([user_id]) REFERENCES \
         [{schema}].[users] ([id]) ON DELETE CASCADE ON UPDATE NO ACTION"
    );
}

#[test]
fn modules_that_differ_are_made_again_and_what_no_plan_reaches_is_listed() {
    let live = shop("t1", |o| {
        set(o, "view", "big_orders", "create view t1.big_orders as select id from t1.orders where id > 5");
        set(o, "column", "users.id", "int not null");
        o.push(object("type", "money_amount", "decimal"));
    });
    let plan = plan(&live);
    assert_eq!(
        sql(&plan),
        [
            "DROP VIEW {schema}.[big_orders]",
            "EXEC (N'create view {schema}.big_orders as select id from {schema}.orders where id > 10')"
        ]
    );
    assert_eq!(
        plan.unplannable,
        [
            "users.id: its identity or computation differs (int not null here, int identity(1, 1) not null in the \
             desired schema)",
            "type money_amount: a user-defined type is not planned",
        ]
    );
}

#[test]
fn a_function_is_dropped_as_one() {
    let live = shop("t1", |o| {
        o.push(object(
            "routine",
            "double_it",
            "CREATE  FUNCTION t1.double_it(@a int) returns int as begin return @a * 2 end",
        ))
    });
    assert_eq!(sql(&plan(&live)), ["DROP FUNCTION {schema}.[double_it]"]);
}

#[test]
fn types_widen_as_sql_server_converts_them() {
    for (from, to) in [
        ("tinyint", "int"),
        ("int", "bigint"),
        ("varchar(10)", "varchar(20)"),
        ("varchar(10)", "nvarchar(10)"),
        ("nvarchar(10)", "nvarchar(max)"),
        ("char(3)", "varchar(3)"),
        ("real", "float"),
        ("decimal(10, 2)", "decimal(12, 3)"),
        ("int", "int"),
    ] {
        assert!(widens(from, to), "{from} -> {to}");
    }
    for (from, to) in [
        ("bigint", "int"),
        ("nvarchar(10)", "varchar(20)"),
        ("varchar(max)", "varchar(8000)"),
        ("decimal(10, 2)", "decimal(10, 3)"),
        ("int", "nvarchar(20)"),
        ("float", "real"),
    ] {
        assert!(!widens(from, to), "{from} -> {to}");
    }
}
