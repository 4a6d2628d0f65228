create table {schema}.api_tokens (
    id         uuid primary key default gen_random_uuid(),
    user_id    bigint not null references {schema}.users (id) on delete cascade,
    token_hash bytea not null,
    last_used  timestamptz,
    expires_at timestamptz
);
create unique index api_tokens_hash_idx on {schema}.api_tokens (token_hash);
alter table {schema}.api_tokens add constraint api_tokens_expiry check (expires_at is null or expires_at > now() - interval '1 day');
