set local lock_timeout = '3s';

alter table {schema}.invoices
    add column paid_by bigint;

alter table {schema}.invoices
    add constraint invoices_paid_by_fk foreign key (paid_by) references {schema}.users (id) not valid;
