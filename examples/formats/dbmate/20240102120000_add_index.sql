-- migrate:up transaction:false
create index {schema}.users_email on users (email);

-- migrate:down
drop index {schema}.users_email;
