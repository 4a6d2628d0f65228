alter table {schema}.users rename column display to display_name;
alter table {schema}.accounts add column external_ref uuid default gen_random_uuid();
alter table {schema}.accounts add constraint accounts_name_key unique (name);
