create table {schema}.orders (id integer primary key, user_id integer not null);
