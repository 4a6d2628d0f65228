alter table {schema}.users add column name text;
