create table {schema}.users (id int identity(1, 1) primary key, email nvarchar(255) not null);
