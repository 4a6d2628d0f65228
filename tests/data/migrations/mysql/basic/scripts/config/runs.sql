insert into {schema}.settings (name, value) values ('runs', '1')
    on duplicate key update value = cast(value as signed) + 1;
