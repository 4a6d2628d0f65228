create table {schema}.orders (id integer primary key);
