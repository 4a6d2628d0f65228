create table {schema}.users (id integer auto_increment primary key, email text not null);
