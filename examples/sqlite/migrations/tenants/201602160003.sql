alter table {schema}.users add column created text;
create index {schema}.users_country on users (country);
