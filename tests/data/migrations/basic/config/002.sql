create table {schema}.settings (key text primary key, value text not null);
