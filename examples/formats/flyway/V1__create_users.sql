create table {schema}.users (id integer primary key, email text not null);
