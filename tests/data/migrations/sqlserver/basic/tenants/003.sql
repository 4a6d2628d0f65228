create index users_email on {schema}.users (email);
