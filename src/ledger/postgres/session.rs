//! A connection or transaction together with the statements its connection
//! has prepared (`Statements`). A statement given as text is prepared by
//! the `postgres` client before each call: two round trips, and the server
//! parses and plans it each time. The statements of a batch's admission,
//! claim and answer run a hundred times in a million-URL submit, so each
//! connection prepares each text once and runs it by name after (the
//! server may then keep a generic plan of it).

use super::pg;
use pg::types::{BorrowToSql, ToSql};
use pg::{GenericClient, Row, RowIter, Statement};
use std::collections::HashMap;

/// The statements one connection has prepared, by their text. A
/// connection opened anew starts with none (`Conn::live`): a statement is
/// the connection's own. Texts come from a small set (values are always
/// parameters), so the set stays small.
#[derive(Default)]
pub(super) struct Statements(HashMap<String, Statement>);

/// `client` (a connection or a transaction of it) with its connection's
/// `Statements`: its methods are the client's, the text of a statement
/// prepared once.
pub(super) struct Session<'a, C> {
    pub(super) client: &'a mut C,
    statements: &'a mut Statements,
    /// The groups whose spans this session holds (`batches::lock_spans`):
    /// a session is one transaction, or none, and an advisory lock taken
    /// again in the same transaction costs a round trip and changes
    /// nothing.
    pub(super) spans_held: Vec<i64>,
}

/// A statement as a `Session` takes it: its text, or one prepared already.
pub(super) trait Sql {
    fn statement(&self, client: &mut impl GenericClient, statements: &mut Statements) -> Result<Statement, pg::Error>;
}

impl Sql for str {
    fn statement(&self, client: &mut impl GenericClient, statements: &mut Statements) -> Result<Statement, pg::Error> {
        if let Some(statement) = statements.0.get(self) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(self)?;
        statements.0.insert(self.to_string(), statement.clone());
        Ok(statement)
    }
}

impl Sql for String {
    fn statement(&self, client: &mut impl GenericClient, statements: &mut Statements) -> Result<Statement, pg::Error> {
        self.as_str().statement(client, statements)
    }
}

impl Sql for Statement {
    fn statement(&self, _: &mut impl GenericClient, _: &mut Statements) -> Result<Statement, pg::Error> {
        Ok(self.clone())
    }
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl<'a, C: GenericClient> Session<'a, C> {
    pub(super) fn new(client: &'a mut C, statements: &'a mut Statements) -> Session<'a, C> {
        Session { client, statements, spans_held: Vec::new() }
    }

    pub(super) fn prepare(&mut self, sql: &str) -> Result<Statement, pg::Error> {
        sql.statement(self.client, self.statements)
    }

    pub(super) fn query(&mut self, sql: &(impl Sql + ?Sized), params: Params<'_>) -> Result<Vec<Row>, pg::Error> {
        let statement = sql.statement(self.client, self.statements)?;
        self.client.query(&statement, params)
    }

    pub(super) fn query_one(&mut self, sql: &(impl Sql + ?Sized), params: Params<'_>) -> Result<Row, pg::Error> {
        let statement = sql.statement(self.client, self.statements)?;
        self.client.query_one(&statement, params)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &(impl Sql + ?Sized),
        params: Params<'_>,
    ) -> Result<Option<Row>, pg::Error> {
        let statement = sql.statement(self.client, self.statements)?;
        self.client.query_opt(&statement, params)
    }

    pub(super) fn execute(&mut self, sql: &(impl Sql + ?Sized), params: Params<'_>) -> Result<u64, pg::Error> {
        let statement = sql.statement(self.client, self.statements)?;
        self.client.execute(&statement, params)
    }

    pub(super) fn query_raw<P, I>(&mut self, sql: &(impl Sql + ?Sized), params: I) -> Result<RowIter<'_>, pg::Error>
    where
        P: BorrowToSql,
        I: IntoIterator<Item = P>,
        I::IntoIter: ExactSizeIterator,
    {
        let statement = sql.statement(self.client, self.statements)?;
        self.client.query_raw(&statement, params)
    }

    /// Statements run as text, unprepared (more than one, or one that
    /// takes no parameters and runs once).
    pub(super) fn batch_execute(&mut self, sql: &str) -> Result<(), pg::Error> {
        self.client.batch_execute(sql)
    }
}
