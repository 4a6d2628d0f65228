create database {schema};
create table {schema}.countries (code varchar(2) primary key, name text not null);
insert into {schema}.countries values ('DE', 'Germany'), ('PL', 'Poland');
