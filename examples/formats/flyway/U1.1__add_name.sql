alter table {schema}.users drop column name;
