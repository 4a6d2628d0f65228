insert into {schema}.settings (key, value) values ('runs', '1') on conflict (key) do update set value = cast(value as integer) + 1;
