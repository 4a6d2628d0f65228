create table {schema}.a (id integer);
