create table {schema}.b (id integer);
insert into {schema}.b values (1);
