-- migrate:up
create table {schema}.users (id integer primary key, email text not null);

-- migrate:down
drop table {schema}.users;
