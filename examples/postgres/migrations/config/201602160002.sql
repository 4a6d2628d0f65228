create schema {schema};
create table {schema}.settings (name text primary key, value text not null);
