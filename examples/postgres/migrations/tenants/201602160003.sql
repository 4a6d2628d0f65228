alter table {schema}.users add column created timestamptz not null default now();
create index users_country on {schema}.users (country);
