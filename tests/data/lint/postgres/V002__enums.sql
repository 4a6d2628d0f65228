create type {schema}.invoice_status as enum ('draft', 'open', 'paid', 'void');

create table {schema}.invoices (
    id          bigserial primary key,
    account_id  uuid not null references {schema}.accounts (id),
    status      {schema}.invoice_status not null default 'draft',
    total_cents bigint not null default 0,
    issued_on   date
);
comment on table {schema}.invoices is 'One row per invoice sent to an account.';
