create schema {schema};
create table {schema}.a (id integer);
