use super::super::tests::{object, remove, set, sql};
use super::super::{Catalog, Plan, plan as plan_for};
use super::widens;
use crate::migrate::driver::Driver;
use crate::migrate::fingerprint::CatalogObject;

/// A tenant's catalog as MariaDB's desired reading gives it: `users`
/// (a key, a unique prefix index, a check), `orders` with a foreign key to
/// it, a view, a function and a trigger; `edit` changes the objects first.
fn shop(schema: &str, edit: impl FnOnce(&mut Vec<CatalogObject>)) -> Catalog {
    let mut objects = vec![
        object("relation", "users", "table"),
        object("table engine", "users", "engine=InnoDB"),
        object("column", "users.id", "int(11) not null auto_increment"),
        object("column", "users.email", "varchar(64) not null"),
        object("column", "users.credit", "decimal(10,2) not null default 0.00"),
        object("column check", "users.credit", "`credit` >= 0"),
        object("column order", "users", "id\nemail\ncredit"),
        object("index", "users.PRIMARY", "primary key (`id`)"),
        object("index", "users.users_email", "unique index (`email`(20) desc)"),
        object("check", "users.short_email", "char_length(`email`) < 60"),
        object("relation", "orders", "table"),
        object("table engine", "orders", "engine=InnoDB"),
        object("column", "orders.id", "bigint(20) not null"),
        object("column", "orders.user_id", "int(11)"),
        object("column order", "orders", "id\nuser_id"),
        object("index", "orders.PRIMARY", "primary key (`id`)"),
        object("index", "orders.orders_user", "index (`user_id`)"),
        object(
            "foreign key",
            "orders.orders_user",
            &format!("(`user_id`) references `{schema}`.`users` (`id`) on delete cascade on update restrict"),
        ),
        object("relation", "big_orders", "view"),
        object(
            "view",
            "big_orders",
            &format!(
                "select `{schema}`.`orders`.`id` AS `id` from `{schema}`.`orders` where `{schema}`.`orders`.`id` > 10"
            ),
        ),
        object("routine", "double_it", "function (`a` int(11)) returns int(11) deterministic\nreturn a * 2"),
        object(
            "trigger",
            "orders_id",
            &format!("before insert on `{schema}`.`orders` for each row set new.id = new.id + 1"),
        ),
    ];
    edit(&mut objects);
    Catalog::new(schema, &objects)
}

fn desired() -> Catalog {
    shop("strata_desired", |_| {})
}

fn plan(live: &Catalog) -> Plan {
    plan_for(Driver::Mysql, &desired(), live)
}

#[test]
fn a_tenant_built_from_the_same_ddl_needs_nothing_whatever_its_name() {
    let plan = plan(&shop("tenant_7", |_| {}));
    assert!(plan.is_empty(), "{plan:?}");
}

#[test]
fn an_empty_tenant_gets_every_table_with_its_keys_then_foreign_keys_routines_views_and_triggers() {
    let plan = plan(&Catalog::new("t1", &[]));
    assert_eq!(
        sql(&plan),
        [
            "CREATE TABLE {schema}.`orders` (\n    `id` bigint(20) not null,\n    `user_id` int(11),\n    \
             PRIMARY KEY (`id`),\n    INDEX `orders_user` (`user_id`)\n) engine=InnoDB",
            "CREATE TABLE {schema}.`users` (\n    `id` int(11) not null auto_increment,\n    `email` varchar(64) not null,\n    \
             `credit` decimal(10,2) not null default 0.00 check (`credit` >= 0),\n    PRIMARY KEY (`id`),\n    \
             UNIQUE INDEX `users_email` (`email`(20) desc),\n    CONSTRAINT `short_email` CHECK (char_length(`email`) < 60)\n) engine=InnoDB",
            "ALTER TABLE {schema}.`orders` ADD CONSTRAINT `orders_user` FOREIGN KEY (`user_id`) references `{schema}`.`users` (`id`) \
             on delete cascade on update restrict",
            "CREATE FUNCTION {schema}.`double_it` (`a` int(11)) returns int(11) deterministic\nreturn a * 2",
            "CREATE VIEW {schema}.`big_orders` AS\nselect `{schema}`.`orders`.`id` AS `id` from `{schema}`.`orders` where `{schema}`.`orders`.`id` > 10",
            "CREATE TRIGGER {schema}.`orders_id` before insert on `{schema}`.`orders` for each row set new.id = new.id + 1",
        ]
    );
    assert!(!plan.destructive());
}

#[test]
fn a_missing_column_is_added_where_the_desired_file_puts_it_and_an_extra_one_dropped_last() {
    let live = shop("t1", |o| {
        remove(o, "column", "users.email");
        set(o, "column order", "users", "id\ncredit\nlegacy");
        o.push(object("column", "users.legacy", "tinyint(1)"));
        remove(o, "index", "users.users_email");
        remove(o, "check", "users.short_email");
    });
    let plan = plan(&live);
    assert_eq!(
        sql(&plan),
        [
            "ALTER TABLE {schema}.`users` ADD COLUMN `email` varchar(64) not null AFTER `id`",
            "ALTER TABLE {schema}.`users` ADD CONSTRAINT `short_email` CHECK (char_length(`email`) < 60)",
            "ALTER TABLE {schema}.`users` ADD UNIQUE INDEX `users_email` (`email`(20) desc)",
            "ALTER TABLE {schema}.`users` DROP COLUMN `legacy`",
        ]
    );
    assert_eq!(plan.steps.iter().map(|s| s.destructive).collect::<Vec<_>>(), [false, false, false, true]);
}

#[test]
fn a_column_changed_is_modified_in_place_destructive_only_when_its_type_narrows() {
    let wider = plan(&shop("t1", |o| set(o, "column", "users.email", "varchar(32) not null")));
    assert_eq!(sql(&wider), ["ALTER TABLE {schema}.`users` MODIFY COLUMN `email` varchar(64) not null"]);
    assert!(!wider.destructive());
    let narrower = plan(&shop("t1", |o| set(o, "column", "users.email", "text not null")));
    assert!(narrower.destructive(), "{narrower:?}");
    let default_only = plan(&shop("t1", |o| set(o, "column", "users.credit", "decimal(10,2) not null default 1.00")));
    assert_eq!(
        sql(&default_only),
        [
            "ALTER TABLE {schema}.`users` MODIFY COLUMN `credit` decimal(10,2) not null default 0.00 check (`credit` >= 0)"
        ]
    );
    assert!(!default_only.destructive(), "{default_only:?}");
    let check_only = plan(&shop("t1", |o| remove(o, "column check", "users.credit")));
    assert_eq!(sql(&check_only), sql(&default_only));
}

#[test]
fn a_changed_index_check_or_foreign_key_is_dropped_before_and_made_after_the_columns() {
    let live = shop("t1", |o| {
        set(o, "index", "orders.orders_user", "index (`user_id`, `id`)");
        set(
            o,
            "foreign key",
            "orders.orders_user",
            "(`user_id`) references `t1`.`users` (`id`) on delete restrict on update restrict",
        );
        set(o, "index", "users.PRIMARY", "primary key (`id`, `email`)");
    });
    assert_eq!(
        sql(&plan(&live)),
        [
            "ALTER TABLE {schema}.`orders` DROP FOREIGN KEY `orders_user`",
            "ALTER TABLE {schema}.`orders` DROP INDEX `orders_user`",
            "ALTER TABLE {schema}.`users` DROP PRIMARY KEY",
            "ALTER TABLE {schema}.`orders` ADD CONSTRAINT `orders_user` FOREIGN KEY (`user_id`) references `{schema}`.`users` (`id`) \
             on delete cascade on update restrict",
            "ALTER TABLE {schema}.`orders` ADD INDEX `orders_user` (`user_id`)",
            "ALTER TABLE {schema}.`users` ADD PRIMARY KEY (`id`)",
        ]
    );
}

#[test]
fn views_routines_and_triggers_that_differ_are_made_again_and_extra_ones_dropped() {
    let live = shop("t1", |o| {
        set(o, "view", "big_orders", "select `t1`.`orders`.`id` AS `id` from `t1`.`orders`");
        set(o, "routine", "double_it", "function (`a` int(11)) returns int(11) deterministic\nreturn a + a + 0");
        o.push(object("routine", "old_proc", "procedure (IN `a` int(11))\nselect a"));
        o.push(object("trigger", "orders_audit", "after delete on `t1`.`orders` for each row set @n = 1"));
    });
    assert_eq!(
        sql(&plan(&live)),
        [
            "DROP TRIGGER {schema}.`orders_audit`",
            "DROP FUNCTION {schema}.`double_it`",
            "DROP PROCEDURE {schema}.`old_proc`",
            "CREATE FUNCTION {schema}.`double_it` (`a` int(11)) returns int(11) deterministic\nreturn a * 2",
            "CREATE OR REPLACE VIEW {schema}.`big_orders` AS\nselect `{schema}`.`orders`.`id` AS `id` from `{schema}`.`orders` where `{schema}`.`orders`.`id` > 10",
        ]
    );
}

#[test]
fn an_extra_table_is_dropped_last_and_a_table_that_became_a_view_is_not_planned() {
    let live = shop("t1", |o| {
        o.push(object("relation", "scratch", "table"));
        o.push(object("column", "scratch.id", "int(11)"));
        set(o, "relation", "big_orders", "table");
    });
    let plan = plan(&live);
    assert_eq!(sql(&plan), ["DROP TABLE {schema}.`scratch`"]);
    assert!(plan.destructive());
    assert_eq!(plan.unplannable, ["big_orders is a view in the desired schema and a table here"]);
}

#[test]
fn widening_follows_mariadbs_types() {
    for (from, to) in [
        ("int(11)", "bigint(20)"),
        ("int(11)", "int(10)"),
        ("int(10) unsigned", "bigint(20)"),
        ("smallint(5) unsigned", "int(10) unsigned"),
        ("varchar(10)", "varchar(20)"),
        ("varchar(10)", "text"),
        ("text", "longtext"),
        ("float", "double"),
        ("decimal(10,2)", "decimal(12,3)"),
    ] {
        assert!(widens(from, to), "{from} -> {to}");
    }
    for (from, to) in [
        ("bigint(20)", "int(11)"),
        ("int(11)", "int(10) unsigned"),
        ("int(10) unsigned", "int(11)"),
        ("varchar(20)", "varchar(10)"),
        ("varchar(300)", "tinytext"),
        ("longtext", "text"),
        ("double", "float"),
        ("decimal(10,2)", "decimal(10,1)"),
        ("decimal(10,2)", "decimal(11,4)"),
        ("datetime", "date"),
    ] {
        assert!(!widens(from, to), "{from} -> {to}");
    }
}
