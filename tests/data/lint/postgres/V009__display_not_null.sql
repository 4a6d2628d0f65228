update {schema}.users set display = split_part(email, '@', 1) where display is null;

alter table {schema}.users
    add constraint users_display_nn check (display is not null) not valid;
alter table {schema}.users validate constraint users_display_nn;
alter table {schema}.users alter column display set not null;
alter table {schema}.users drop constraint users_display_nn;
