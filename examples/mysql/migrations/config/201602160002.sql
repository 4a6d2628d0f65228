create database {schema};
create table {schema}.settings (name varchar(64) primary key, value text not null);
