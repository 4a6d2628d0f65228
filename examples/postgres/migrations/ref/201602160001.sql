-- Single schemas are created by their own first migration.
create schema {schema};
create table {schema}.countries (code char(2) primary key, name text not null);
insert into {schema}.countries (code, name) values ('DE', 'Germany'), ('FR', 'France'), ('PL', 'Poland');
