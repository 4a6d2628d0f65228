drop table {schema}.orders;
