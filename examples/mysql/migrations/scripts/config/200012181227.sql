-- A script: runs on every version. Keep it idempotent.
insert into {schema}.settings (name, value) values ('last_run', now())
    on duplicate key update value = now();
