-- Accounts and their users.
create extension if not exists pgcrypto;

create table {schema}.accounts (
    id          uuid primary key default gen_random_uuid(),
    name        text not null,
    plan        text not null default 'free' check (plan in ('free', 'team', 'enterprise')),
    created_at  timestamptz not null default now()
);

create table {schema}.users (
    id          bigint generated always as identity primary key,
    account_id  uuid not null references {schema}.accounts (id) on delete cascade,
    email       text not null,
    display     text,
    created_at  timestamptz not null default now(),
    unique (account_id, email)
);

create index users_account_idx on {schema}.users (account_id);
