drop table {schema}.users;
