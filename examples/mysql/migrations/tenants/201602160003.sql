alter table {schema}.users add column created datetime(6) not null default current_timestamp(6);
create index users_country on {schema}.users (country);
