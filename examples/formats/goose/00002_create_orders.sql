-- +goose Up
create table {schema}.orders (id integer primary key);

-- +goose Down
drop table {schema}.orders;
