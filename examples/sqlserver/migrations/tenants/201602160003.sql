alter table {schema}.users add created datetime2 not null default sysutcdatetime();
create index users_country on {schema}.users (country);
