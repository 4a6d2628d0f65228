create table {schema}.users (id int identity(1, 1) primary key, email nvarchar(255) not null unique, country char(2) not null);
