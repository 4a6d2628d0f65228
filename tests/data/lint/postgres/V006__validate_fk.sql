alter table {schema}.invoices validate constraint invoices_paid_by_fk;
