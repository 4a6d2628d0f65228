create or replace view {schema}.open_invoices as
    select i.id, i.account_id, a.name as account_name, i.total_cents
      from {schema}.invoices i
      join {schema}.accounts a on a.id = i.account_id
     where i.status = 'open';

grant select on {schema}.open_invoices to reporting;
create materialized view {schema}.invoice_totals as
    select account_id, sum(total_cents) as total from {schema}.invoices group by account_id;
refresh materialized view {schema}.invoice_totals;
