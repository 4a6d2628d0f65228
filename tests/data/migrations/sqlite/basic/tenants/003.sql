create index {schema}.users_email on users (email);
