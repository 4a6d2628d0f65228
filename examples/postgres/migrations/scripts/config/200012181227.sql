-- A script: runs on every version. Keep it idempotent.
insert into {schema}.settings (name, value) values ('last_run', now()::text)
    on conflict (name) do update set value = excluded.value;
