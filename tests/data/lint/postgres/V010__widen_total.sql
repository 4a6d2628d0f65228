-- The invoice totals outgrew integer cents on one tenant.
alter table {schema}.invoices alter column total_cents type numeric(18, 0);
