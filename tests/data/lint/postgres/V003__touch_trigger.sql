create or replace function {schema}.touch_updated_at() returns trigger
language plpgsql as $$
begin
    new.updated_at := now();
    return new;
end;
$$;

alter table {schema}.users add column updated_at timestamptz not null default now();

create trigger users_touch
    before update on {schema}.users
    for each row execute function {schema}.touch_updated_at();
