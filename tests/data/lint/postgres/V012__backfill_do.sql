do $$
declare
    batch int := 0;
begin
    loop
        update {schema}.invoices set issued_on = current_date
         where id in (select id from {schema}.invoices where issued_on is null limit 1000);
        exit when not found;
        batch := batch + 1;
    end loop;
end
$$;
