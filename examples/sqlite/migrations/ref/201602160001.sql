-- Reference data shared by every tenant.
create table {schema}.countries (
    code text primary key,
    name text not null
);
insert into {schema}.countries (code, name) values ('DE', 'Germany'), ('FR', 'France'), ('PL', 'Poland');
