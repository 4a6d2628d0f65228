//! SQL Server's desired files: batches cut at `GO` lines, read as T-SQL
//! reads them, where statements need no `;` between them and a batch's
//! first statement may call a procedure without `EXEC`. So a batch is
//! judged whole:
//!
//! - a **module** batch (`CREATE [OR ALTER]` or `ALTER` of a view,
//!   procedure, function or trigger) is that one statement to the batch's
//!   end, its body stored, not run: its name must be the scratch schema's;
//! - any **other** batch begins with `CREATE`, `ALTER` or `SET`, holds no
//!   word that runs or changes anything (`EXEC`, `SELECT`, `INSERT`,
//!   `DROP`, `DECLARE`, `WAITFOR`, `OPENROWSET`, … — `UPDATE` and `DELETE`
//!   only as a foreign key's `ON UPDATE`/`ON DELETE`), and every `CREATE`
//!   or `ALTER` in it names an object of the scratch schema (an index its
//!   table after `ON`).

use sqlparser::tokenizer::Token;

use super::{OutsideScratch, keyword, qualified_by_scratch};
use crate::migrate::batches::split_go_batches;
use crate::migrate::driver::Driver;
use crate::migrate::statements::tokenize;

/// Words that run or change something where they stand in a batch of
/// definitions: each a reserved word of T-SQL, so never a column's or a
/// table's name unless quoted.
const RUNS: [&str; 38] = [
    "EXEC",
    "EXECUTE",
    "SELECT",
    "INSERT",
    "MERGE",
    "DROP",
    "TRUNCATE",
    "BULK",
    "WAITFOR",
    "DBCC",
    "KILL",
    "SHUTDOWN",
    "BACKUP",
    "RESTORE",
    "RECONFIGURE",
    "GRANT",
    "REVOKE",
    "DENY",
    "USE",
    "DECLARE",
    "PRINT",
    "RAISERROR",
    "OPENROWSET",
    "OPENQUERY",
    "OPENDATASOURCE",
    "OPENXML",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVE",
    "IF",
    "WHILE",
    "GOTO",
    "RETURN",
    "READTEXT",
    "WRITETEXT",
    "UPDATETEXT",
    "CHECKPOINT",
];

/// Module words: the statement is the whole batch.
const MODULES: [&str; 5] = ["VIEW", "PROC", "PROCEDURE", "FUNCTION", "TRIGGER"];

/// Object words a batch of definitions may create or alter.
const OBJECTS: [&str; 5] = ["TABLE", "INDEX", "SEQUENCE", "TYPE", "STATISTICS"];

/// Checks every batch of `text` (its placeholder replaced by `scratch`).
pub(super) fn check(text: &str, scratch: &str) -> Result<(), OutsideScratch> {
    for batch in split_go_batches(text) {
        let start = batch.as_ptr() as usize - text.as_ptr() as usize;
        let first_line = text[..start].matches('\n').count() + 1;
        let refuse = |at: u64, reason: &'static str| {
            let line = first_line + at.saturating_sub(1) as usize;
            let text = batch.lines().nth(at.saturating_sub(1) as usize).unwrap_or("");
            let statement = text.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
            Err(OutsideScratch { line, statement, reason })
        };
        let Ok(tokens) = tokenize(Driver::SqlServer, batch) else {
            return refuse(1, "the statement cannot be read as SQL");
        };
        let (tokens, lines): (Vec<&Token>, Vec<u64>) = tokens
            .iter()
            .filter(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF | Token::SemiColon))
            .map(|t| (&t.token, t.span.start.line))
            .unzip();
        if let Err((at, reason)) = judge(&tokens, scratch) {
            return refuse(lines.get(at).or(lines.first()).copied().unwrap_or(1), reason);
        }
    }
    Ok(())
}

/// Why the batch `tokens` is refused, with the index of the token that
/// says so.
fn judge(tokens: &[&Token], scratch: &str) -> Result<(), (usize, &'static str)> {
    let word = |i: usize| keyword(tokens.get(i));
    let statement_words = "a desired schema holds only CREATE, ALTER and SET statements (no queries, EXEC, data \
                           changes, drops or renames)";
    if tokens.is_empty() {
        return Ok(());
    }
    if !matches!(word(0).as_deref(), Some("CREATE" | "ALTER" | "SET")) {
        return Err((0, statement_words));
    }
    // CREATE [OR ALTER] | ALTER, then the module word.
    let object_at = if word(1).as_deref() == Some("OR") && word(2).as_deref() == Some("ALTER") { 3 } else { 1 };
    if word(0).as_deref() != Some("SET") && word(object_at).is_some_and(|w| MODULES.contains(&w.as_str())) {
        return qualified_by_scratch(tokens, object_at + 1, scratch, true).map_err(|reason| (object_at, reason));
    }
    for i in 0..tokens.len() {
        let Some(w) = word(i) else { continue };
        let after_on = word(i.wrapping_sub(1)).as_deref() == Some("ON");
        if RUNS.contains(&w.as_str()) || (matches!(w.as_str(), "UPDATE" | "DELETE") && !after_on) {
            return Err((i, statement_words));
        }
        if matches!(w.as_str(), "CREATE" | "ALTER") && word(i + 1).as_deref() != Some("COLUMN") {
            defines_in_scratch(tokens, i, scratch).map_err(|reason| (i, reason))?;
        }
    }
    Ok(())
}

/// The `CREATE` or `ALTER` at `at` (not `ALTER COLUMN`): of a table, index,
/// sequence, type or statistics named in the scratch schema.
fn defines_in_scratch(tokens: &[&Token], at: usize, scratch: &str) -> Result<(), &'static str> {
    let Some(object) = (at + 1..tokens.len().min(at + 6))
        .find(|&i| keyword(tokens.get(i)).is_some_and(|w| OBJECTS.contains(&w.as_str())))
    else {
        return Err("not a definition of a table, index, view, routine, trigger or sequence of the tenant's schema");
    };
    let name_at = match keyword(tokens.get(object)).as_deref() {
        Some("INDEX" | "STATISTICS") => {
            let Some(on) = (object + 1..tokens.len()).find(|&i| keyword(tokens.get(i)).as_deref() == Some("ON")) else {
                return Err("an index names its table");
            };
            on + 1
        }
        _ => object + 1,
    };
    qualified_by_scratch(tokens, name_at, scratch, true)
}

#[cfg(test)]
mod tests {
    use crate::migrate::desired::scope::check;
    use crate::migrate::driver::Driver;

    const SCRATCH: &str = "strata_desired";

    #[test]
    fn definitions_and_modules_of_the_scratch_schema_pass() {
        let text = "SET ANSI_NULLS ON\nGO\n\
            create table strata_desired.users (id int identity(1, 1) primary key, email nvarchar(255) not null,\n\
              credit decimal(10, 2) not null default 0, constraint credit_positive check (credit >= 0));\n\
            create index users_email on strata_desired.users (email);\n\
            create table [strata_desired].[notes] (id bigint not null constraint notes_pk primary key, user_id int null,\n\
              constraint notes_user foreign key (user_id) references strata_desired.users (id) on delete cascade on update no action)\n\
            create unique nonclustered index notes_user on strata_desired.notes (user_id) include (id) where user_id is not null;\n\
            alter table strata_desired.users alter column email nvarchar(400) not null;\n\
            alter table strata_desired.users add constraint df_credit default 0 for credit;\n\
            GO\n\
            create view strata_desired.user_emails as select id, email from strata_desired.users;\n\
            GO\n\
            create or alter procedure strata_desired.credit_of @id int as begin select credit from strata_desired.users where id = @id; exec sp_who; end\n\
            GO\n\
            create trigger strata_desired.notes_kept on strata_desired.notes after insert as set nocount on;\n";
        assert_eq!(check(Driver::SqlServer, text, SCRATCH), Ok(()));
    }

    #[test]
    fn what_runs_or_lands_elsewhere_is_refused_with_its_line() {
        let refused = |text: &str| check(Driver::SqlServer, text, SCRATCH).unwrap_err();
        let only = "holds only CREATE, ALTER and SET";
        // A query beside a definition, with or without `;`, and a procedure
        // called as a batch's first statement.
        let leak = refused(
            "create table strata_desired.t (id int)\nGO\ncreate table strata_desired.u (id int)\nexec ('create view strata_desired.v as select 1 as x')\n",
        );
        assert_eq!(
            (leak.line, leak.statement.as_str(), leak.reason.contains(only)),
            (4, "exec ('create view strata_desired.v as select", true)
        );
        assert!(refused("create table strata_desired.t (id int) select * from svc.svc_tokens").reason.contains(only));
        assert!(refused("sp_configure 'xp_cmdshell', 1").reason.contains(only));
        assert!(
            refused("create table strata_desired.t (id int); insert into strata_desired.t values (1)")
                .reason
                .contains(only)
        );
        assert!(refused("create table strata_desired.t (id int)\nwaitfor delay '01:00:00'").reason.contains(only));
        // Words T-SQL does not reserve stay names.
        let names = "create table strata_desired.flags (enable bit, disable bit, throw int, rename int)";
        assert_eq!(check(Driver::SqlServer, names, SCRATCH), Ok(()));
        assert!(refused("create table strata_desired.t (id int)\ndrop table svc.svc_migrations").reason.contains(only));
        assert!(refused("alter table strata_desired.t add c as (select 1)").reason.contains(only));
        // Elsewhere.
        assert_eq!(refused("create table dbo.t (id int)").reason, "names an object of another schema");
        assert_eq!(refused("create index i on svc.svc_migrations (id)").reason, "names an object of another schema");
        assert_eq!(refused("create view dbo.v as select 1 as x").reason, "names an object of another schema");
        assert!(refused("create table #t (id int)").reason.contains("schema.name"));
        assert!(refused("create login eve with password = 'x'").reason.contains("not a definition"));
        assert!(
            refused("create table strata_desired.t (id int)\nGO\nalter database current set single_user")
                .reason
                .contains("not a definition")
        );
    }
}
