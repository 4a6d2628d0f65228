create table {schema}.users (id int auto_increment primary key, email varchar(255) not null unique, country char(2) not null);
