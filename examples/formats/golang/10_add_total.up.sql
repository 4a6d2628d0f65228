alter table {schema}.orders add column total integer not null default 0;
