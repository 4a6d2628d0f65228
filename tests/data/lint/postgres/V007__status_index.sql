create index invoices_status_idx on {schema}.invoices (status) where status <> 'void';
