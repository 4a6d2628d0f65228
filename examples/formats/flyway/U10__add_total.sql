alter table {schema}.orders drop column total;
