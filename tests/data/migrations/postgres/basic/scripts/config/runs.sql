insert into {schema}.settings (name, value) values ('runs', '1')
    on conflict (name) do update set value = (cast(settings.value as integer) + 1)::text;
