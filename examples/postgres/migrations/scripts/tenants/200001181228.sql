-- A tenant script: runs in every tenant on every version.
delete from {schema}.users where email = '';
