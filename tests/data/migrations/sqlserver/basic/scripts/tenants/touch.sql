insert into {schema}.users (email) values ('script@example.com');
