create table {schema}.users (id serial primary key, email text not null);
