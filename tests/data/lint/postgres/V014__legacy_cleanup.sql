-- strata:allow dropping-table
drop table if exists {schema}.legacy_sessions;
alter table {schema}.accounts drop column if exists legacy_flags;
