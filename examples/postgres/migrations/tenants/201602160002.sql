create table {schema}.users (id serial primary key, email text not null unique, country char(2) not null);
