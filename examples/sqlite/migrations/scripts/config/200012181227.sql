-- A script: runs on every version. Keep it idempotent.
insert into {schema}.settings (key, value) values ('last_run', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
    on conflict (key) do update set value = excluded.value;
