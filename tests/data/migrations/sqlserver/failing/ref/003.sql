create table {schema}.c (id integer);
insert into {schema}.no_such_table values (1);
