-- strata:no-transaction
create unique index concurrently if not exists users_email_lower_idx
    on {schema}.users (lower(email));
