if exists (select 1 from {schema}.settings where name = 'runs')
    update {schema}.settings set value = cast(cast(value as int) + 1 as nvarchar(max)) where name = 'runs'
else
    insert into {schema}.settings (name, value) values ('runs', '1');
