use crate::migrate::backfill::KeyValue;
use crate::migrate::backfill::sql::*;

use Slot::{Limit, Lower, Upper};

// The renderers under test, each given its statement as a file's text (the
// template read from it first, as a runner reads it once per backfill).
fn batch(t: &Target<'_>, statement: &str, from_start: bool) -> Rendered {
    super::batch(t, &Template::ranged(t.driver, statement), from_start)
}

fn batch_with_integers<'t>(
    t: &'t Target<'_>,
    statement: &str,
    lower: Option<&'t Key>,
    upper: Option<&'t Key>,
) -> Option<String> {
    super::batch_with_integers(t, &Template::ranged(t.driver, statement), lower, upper)
}

fn repeated(driver: Driver, statement: &str) -> Rendered {
    super::repeated(driver, &Template::repeated(driver, statement))
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn rendered(sql: &str, binds: &[Slot]) -> Rendered {
    Rendered { sql: sql.to_string(), binds: binds.to_vec() }
}

const FILE: &str = "-- strata:backfill table={schema}.orders key=id batch=500\n\
                    update tenant_1.orders set total_cents = (total * 100)::bigint where {range};\n";

#[test]
fn postgres_one_column_key() {
    let (key, casts) = (names(&["id"]), names(&["bigint"]));
    let t = Target { driver: Driver::Postgres, table: "tenant_1.orders", key: &key, casts: &casts };
    assert_eq!(key_types("tenant_1.orders", &key), "select pg_typeof((null::tenant_1.orders).id)::text");
    assert_eq!(
        last_key(&t),
        "select id::text from (select id from tenant_1.orders order by id desc limit 1) as strata_last"
    );
    assert_eq!(
        count_up_to(&t),
        rendered("select count(*) from tenant_1.orders where (id) <= ($1::bigint)", &[Upper(0)])
    );
    assert_eq!(
        batch_ends(&t, true, 500, 1),
        rendered(
            "select id::text from (select id, row_number() over (order by id) as strata_n from tenant_1.orders \
             where (id) <= ($1::bigint) order by id limit 500) as strata_ahead where strata_n % 500 = 0 \
             order by strata_n",
            &[Upper(0)]
        )
    );
    assert_eq!(
        batch_ends(&t, false, 1, 8),
        rendered(
            "select id::text from (select id, row_number() over (order by id) as strata_n from tenant_1.orders \
             where (id) > ($1::bigint) and (id) <= ($2::bigint) order by id limit 8) as strata_ahead \
             where strata_n % 1 = 0 order by strata_n",
            &[Lower(0), Upper(0)]
        )
    );
    assert_eq!(
        batch(&t, FILE, false),
        rendered(
            "update tenant_1.orders set total_cents = (total * 100)::bigint where ((id) > ($1::bigint) and (id) \
             <= ($2::bigint))",
            &[Lower(0), Upper(0)]
        )
    );
    assert_eq!(
        batch(&t, FILE, true),
        rendered(
            "update tenant_1.orders set total_cents = (total * 100)::bigint where (id) <= ($1::bigint)",
            &[Upper(0)]
        )
    );
}

#[test]
fn postgres_composite_key_and_two_ranges() {
    let (key, casts) = (names(&["tenant_id", "\"Id\""]), names(&["integer", "uuid"]));
    let t = Target { driver: Driver::Postgres, table: "s.\"Orders\"", key: &key, casts: &casts };
    assert_eq!(
        key_types("s.\"Orders\"", &key),
        "select pg_typeof((null::s.\"Orders\").tenant_id)::text, pg_typeof((null::s.\"Orders\").\"Id\")::text"
    );
    assert_eq!(
        last_key(&t),
        "select tenant_id::text, \"Id\"::text from (select tenant_id, \"Id\" from s.\"Orders\" order by \
         tenant_id desc, \"Id\" desc limit 1) as strata_last"
    );
    assert_eq!(
        count_up_to(&t),
        rendered(
            "select count(*) from s.\"Orders\" where (tenant_id, \"Id\") <= ($1::integer, $2::uuid)",
            &[Upper(0), Upper(1)]
        )
    );
    assert_eq!(
        batch_ends(&t, false, 1000, 2).sql,
        "select tenant_id::text, \"Id\"::text from (select tenant_id, \"Id\", row_number() over (order by \
         tenant_id, \"Id\") as strata_n from s.\"Orders\" where (tenant_id, \"Id\") > ($1::integer, $2::uuid) \
         and (tenant_id, \"Id\") <= ($3::integer, $4::uuid) order by tenant_id, \"Id\" limit 2000) as \
         strata_ahead where strata_n % 1000 = 0 order by strata_n"
    );
    // Each `{range}` gets fresh placeholders; the values are bound again.
    let two = batch(&t, "delete from s.x where {range} and not exists (select 1 from s.y where {range})", false);
    assert_eq!(
        two,
        rendered(
            "delete from s.x where ((tenant_id, \"Id\") > ($1::integer, $2::uuid) and (tenant_id, \"Id\") <= \
             ($3::integer, $4::uuid)) and not exists (select 1 from s.y where ((tenant_id, \"Id\") > \
             ($5::integer, $6::uuid) and (tenant_id, \"Id\") <= ($7::integer, $8::uuid)))",
            &[Lower(0), Lower(1), Upper(0), Upper(1), Lower(0), Lower(1), Upper(0), Upper(1)]
        )
    );
    // No type read: no cast.
    let bare = Target { casts: &[], ..t };
    assert_eq!(
        batch(&bare, "update x set a = 1 where {range}", true).sql,
        "update x set a = 1 where (tenant_id, \"Id\") <= ($1, $2)"
    );
}

#[test]
fn mysql_and_sqlite_bind_question_marks_and_read_keys_as_they_are() {
    for driver in [Driver::Mysql, Driver::Sqlite] {
        let (key, casts) = (names(&["id"]), names(&["ignored"]));
        let t = Target { driver, table: "tenant_1.orders", key: &key, casts: &casts };
        assert_eq!(last_key(&t), "select id from tenant_1.orders order by id desc limit 1");
        assert_eq!(count_up_to(&t), rendered("select count(*) from tenant_1.orders where (id) <= (?)", &[Upper(0)]));
        assert_eq!(
            batch_ends(&t, false, 1000, 8),
            rendered(
                "select id from (select id, row_number() over (order by id) as strata_n from tenant_1.orders \
                 where (id) > (?) and (id) <= (?) order by id limit 8000) as strata_ahead \
                 where strata_n % 1000 = 0 order by strata_n",
                &[Lower(0), Upper(0)]
            )
        );
        assert_eq!(
            batch(&t, FILE, false),
            rendered(
                "update tenant_1.orders set total_cents = (total * 100)::bigint where ((id) > (?) and (id) <= (?))",
                &[Lower(0), Upper(0)]
            )
        );
        let key = names(&["tenant_id", "code"]);
        let t = Target { driver, table: "orders", key: &key, casts: &[] };
        assert_eq!(last_key(&t), "select tenant_id, code from orders order by tenant_id desc, code desc limit 1");
        assert_eq!(
            batch(&t, "update orders set a = 1 where {range}", true),
            rendered("update orders set a = 1 where (tenant_id, code) <= (?, ?)", &[Upper(0), Upper(1)])
        );
    }
    let key = names(&["`id`"]);
    let t = Target { driver: Driver::Mysql, table: "`app`.`orders`", key: &key, casts: &[] };
    assert_eq!(last_key(&t), "select `id` from `app`.`orders` order by `id` desc limit 1");
}

#[test]
fn sql_server_writes_the_row_comparison_out_and_numbers_its_placeholders() {
    let key = names(&["id"]);
    let t = Target { driver: Driver::SqlServer, table: "[tenant 1].orders", key: &key, casts: &[] };
    assert_eq!(last_key(&t), "select top (1) id from [tenant 1].orders order by id desc");
    assert_eq!(count_up_to(&t), rendered("select count(*) from [tenant 1].orders where id <= @P1", &[Upper(0)]));
    assert_eq!(
        batch_ends(&t, false, 1000, 8),
        rendered(
            "select id from (select top (8000) id, row_number() over (order by id) as strata_n from \
             [tenant 1].orders where id > @P1 and id <= @P2 order by id) as strata_ahead \
             where strata_n % 1000 = 0 order by strata_n",
            &[Lower(0), Upper(0)]
        )
    );
    let file = "-- strata:backfill table={schema}.orders key=id\nupdate [tenant 1].orders set total_cents = \
                total * 100 where {range};\nGO\n";
    assert_eq!(
        batch(&t, file, false),
        rendered(
            "update [tenant 1].orders set total_cents = total * 100 where (id > @P1 and id <= @P2)",
            &[Lower(0), Upper(0)]
        )
    );
    // Two columns: a > x or (a = x and b > y), every value bound where used.
    let key = names(&["tenant_id", "code"]);
    let t = Target { driver: Driver::SqlServer, table: "orders", key: &key, casts: &[] };
    assert_eq!(last_key(&t), "select top (1) tenant_id, code from orders order by tenant_id desc, code desc");
    assert_eq!(
        batch(&t, "update orders set a = 1 where not {range}", false),
        rendered(
            "update orders set a = 1 where not ((tenant_id > @P1 or (tenant_id = @P2 and code > @P3)) and \
             (tenant_id < @P4 or (tenant_id = @P5 and code <= @P6)))",
            &[Lower(0), Lower(0), Lower(1), Upper(0), Upper(0), Upper(1)]
        )
    );
    // Three: nested the same way.
    let key = names(&["a", "b", "c"]);
    let t = Target { driver: Driver::SqlServer, table: "t", key: &key, casts: &[] };
    assert_eq!(
        count_up_to(&t),
        rendered(
            "select count(*) from t where (a < @P1 or (a = @P2 and (b < @P3 or (b = @P4 and c <= @P5))))",
            &[Upper(0), Upper(0), Upper(1), Upper(1), Upper(2)]
        )
    );
    assert_eq!(batch_with_integers(&t, "update t set x = 1 where {range}", None, Some(&vec![])), None);
    assert_eq!(
        repeated(Driver::SqlServer, "-- strata:backfill batch=200\ndelete top ({batch}) from t where expired = 1;"),
        rendered("delete top (@P1) from t where expired = 1", &[Limit])
    );
}

#[test]
fn a_repeated_statement_binds_the_limit() {
    let file =
        "-- strata:backfill batch=200\ndelete from t where id in (select id from t where expired limit {batch});";
    assert_eq!(
        repeated(Driver::Postgres, file),
        rendered("delete from t where id in (select id from t where expired limit $1::bigint)", &[Limit])
    );
    assert_eq!(
        repeated(Driver::Sqlite, file),
        rendered("delete from t where id in (select id from t where expired limit ?)", &[Limit])
    );
    assert_eq!(
        repeated(Driver::Mysql, "update t set a = b where a is null limit {batch}; -- {batch}"),
        rendered("update t set a = b where a is null limit ?", &[Limit])
    );
    assert_eq!(
        repeated(
            Driver::Postgres,
            "with d as (select id from t limit {batch}), e as (select id from u limit {batch}) select 1"
        ),
        rendered(
            "with d as (select id from t limit $1::bigint), e as (select id from u limit $2::bigint) select 1",
            &[Limit, Limit]
        )
    );
}

#[test]
fn placeholders_in_strings_and_comments_stay_text() {
    let key = names(&["id"]);
    let t = Target { driver: Driver::Postgres, table: "t", key: &key, casts: &[] };
    assert_eq!(
        batch(&t, "/* {range} */ update t set note = '{range}' where {range} -- {range}", true),
        rendered("update t set note = '{range}' where (id) <= ($1)", &[Upper(0)])
    );
}

#[test]
fn several_range_ends_are_read_at_once_in_key_order() {
    let (key, casts) = (names(&["a", "b"]), names(&["integer", "text"]));
    let t = Target { driver: Driver::Postgres, table: "t1.o", key: &key, casts: &casts };
    assert_eq!(
        batch_ends(&t, false, 100, 4),
        rendered(
            "select a::text, b::text from (select a, b, row_number() over (order by a, b) as strata_n from t1.o \
             where (a, b) > ($1::integer, $2::text) and (a, b) <= ($3::integer, $4::text) order by a, b limit 400) \
             as strata_ahead where strata_n % 100 = 0 order by strata_n",
            &[Lower(0), Lower(1), Upper(0), Upper(1)]
        )
    );
    let key = names(&["id"]);
    let t = Target { driver: Driver::Mysql, table: "t1.o", key: &key, casts: &[] };
    assert_eq!(
        batch_ends(&t, true, 25, 8),
        rendered(
            "select id from (select id, row_number() over (order by id) as strata_n from t1.o where (id) <= (?) \
             order by id limit 200) as strata_ahead where strata_n % 25 = 0 order by strata_n",
            &[Upper(0)]
        )
    );
    assert!(batch_ends(&t, true, 0, 0).sql.contains("limit 1) as strata_ahead where strata_n % 1 = 0"));
}

#[test]
fn postgres_integer_keys_are_written_as_numbers_and_anything_else_stays_bound() {
    let (key, casts) = (names(&["id"]), names(&["bigint"]));
    let t = Target { driver: Driver::Postgres, table: "tenant_1.orders", key: &key, casts: &casts };
    let (lower, upper) = (vec![KeyValue::Text("500".into())], vec![KeyValue::Int(-9_223_372_036_854_775_808)]);
    assert_eq!(
        batch_with_integers(&t, FILE, Some(&lower), Some(&upper)).as_deref(),
        Some(
            "update tenant_1.orders set total_cents = (total * 100)::bigint where ((id) > ('500'::bigint) and (id) \
             <= ('-9223372036854775808'::bigint))"
        )
    );
    assert_eq!(
        batch_with_integers(&t, FILE, None, Some(&upper)).as_deref(),
        Some(
            "update tenant_1.orders set total_cents = (total * 100)::bigint where (id) <= ('-9223372036854775808'::bigint)"
        )
    );
    // Text that is not an integer, even of an integer column, is never written.
    for text in ["500'; drop table x; --", "5e2", " 500", "500.0", ""] {
        let hostile = vec![KeyValue::Text(text.into())];
        assert_eq!(batch_with_integers(&t, FILE, Some(&hostile), Some(&upper)), None, "{text:?}");
        assert_eq!(batch_with_integers(&t, FILE, Some(&lower), Some(&hostile)), None, "{text:?}");
    }
    // A text column, a composite key with a text part, another engine: bound.
    let text_cast = names(&["text"]);
    let text_key = Target { casts: &text_cast, ..t };
    assert_eq!(batch_with_integers(&text_key, FILE, Some(&lower), Some(&upper)), None);
    let (pair, pair_casts) = (names(&["region", "id"]), names(&["text", "integer"]));
    let pairs = Target { key: &pair, casts: &pair_casts, ..t };
    let (a, b) =
        (vec![KeyValue::Text("1".into()), KeyValue::Int(2)], vec![KeyValue::Text("3".into()), KeyValue::Int(4)]);
    assert_eq!(batch_with_integers(&pairs, FILE, Some(&a), Some(&b)), None);
    let int_pair_casts = names(&["smallint", "integer"]);
    let int_pairs = Target { key: &pair, casts: &int_pair_casts, ..t };
    assert_eq!(
        batch_with_integers(&int_pairs, FILE, Some(&a), Some(&b)).as_deref(),
        Some(
            "update tenant_1.orders set total_cents = (total * 100)::bigint where ((region, id) > ('1'::smallint, \
             '2'::integer) and (region, id) <= ('3'::smallint, '4'::integer))"
        )
    );
    // The reads, the same way: numbers in, or bound.
    assert_eq!(
        count_up_to_with_integers(&t, &upper).as_deref(),
        Some("select count(*) from tenant_1.orders where (id) <= ('-9223372036854775808'::bigint)")
    );
    assert_eq!(
        batch_ends_with_integers(&t, Some(&lower), &upper, 1, 8).as_deref(),
        Some(
            "select id::text from (select id, row_number() over (order by id) as strata_n from tenant_1.orders \
             where (id) > ('500'::bigint) and (id) <= ('-9223372036854775808'::bigint) order by id limit 8) as \
             strata_ahead where strata_n % 1 = 0 order by strata_n"
        )
    );
    assert_eq!(count_up_to_with_integers(&text_key, &upper), None);
    assert_eq!(batch_ends_with_integers(&pairs, Some(&a), &b, 1, 8), None);
    let mysql = Target { driver: Driver::Mysql, casts: &[], ..t };
    assert_eq!(count_up_to_with_integers(&mysql, &upper), None);
    assert_eq!(batch_with_integers(&mysql, FILE, Some(&lower), Some(&upper)), None);
    // A missing bound (core never asks for one) writes nothing.
    assert_eq!(batch_with_integers(&t, FILE, Some(&lower), None), None);
}

#[test]
fn every_placeholder_is_filled_in_order_each_time() {
    let template = Template::ranged(Driver::Postgres, "-- c\na {range} '{range}' b {range};\n-- end");
    for _ in 0..2 {
        let mut n = 0;
        let text = template.fill(|| {
            n += 1;
            format!("<{n}>")
        });
        assert_eq!(text, "a <1> '{range}' b <2>");
    }
    // Unreadable text: every occurrence.
    let text = Template::repeated(Driver::Postgres, "a {batch} '{batch}").fill(|| "?".into());
    assert_eq!(text, "a ? '?");
}
