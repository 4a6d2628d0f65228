-- +goose Up
-- +goose StatementBegin
create table {schema}.users (id integer primary key, email text not null);
-- +goose StatementEnd

-- +goose Down
drop table {schema}.users;
