-- A script: runs on every version. Keep it idempotent.
if exists (select 1 from {schema}.settings where name = 'last_run')
    update {schema}.settings set value = convert(nvarchar(30), sysutcdatetime(), 126) where name = 'last_run'
else
    insert into {schema}.settings (name, value) values ('last_run', convert(nvarchar(30), sysutcdatetime(), 126));
