create database {schema};
create table {schema}.a (id integer);
