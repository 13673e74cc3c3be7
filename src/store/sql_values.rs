//! Multi-row `VALUES` for either engine: how many rows a statement may carry, and their
//! placeholders, for the writes that insert or match many rows at once.

use std::fmt::Write as _;

use super::StoreKind;

/// A query on either store, its parameters bound in turn.
pub(crate) type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Parameters per statement at most, well under SQLite's limit (32,766) and PostgreSQL's (65,535).
const PARAMETERS_PER_STATEMENT: usize = 8_192;

/// Rows of `columns` parameters each per multi-row statement.
pub(crate) fn rows_per_statement(columns: usize) -> usize {
    (PARAMETERS_PER_STATEMENT / columns).max(1)
}

/// The `VALUES` of `rows` rows of `columns` parameters each. On SQLite they are anonymous (`?`):
/// sqlx binds a numbered one (`$n`) by its name, which SQLite finds by walking the statement's list
/// of names, so binding numbered parameters costs the square of their number.
pub(crate) fn placeholders(kind: StoreKind, rows: usize, columns: usize) -> String {
    // Written into one string: this runs for every batch of judged jobs recorded.
    let mut values = String::with_capacity(rows * (columns * 6 + 2));
    for row in 0..rows {
        values.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                values.push_str(", ");
            }
            match kind {
                StoreKind::Sqlite => values.push('?'),
                StoreKind::Postgres => {
                    let _ = write!(values, "${}", row * columns + column + 1);
                }
            }
        }
        values.push(')');
    }
    values
}

#[cfg(test)]
mod tests {
    use super::{StoreKind, placeholders};

    #[test]
    fn placeholders_number_the_parameters_row_after_row_on_postgres_and_leave_them_anonymous_on_sqlite() {
        let cases = [
            (StoreKind::Postgres, 1, 1, "($1)"),
            (StoreKind::Postgres, 2, 3, "($1, $2, $3), ($4, $5, $6)"),
            (StoreKind::Sqlite, 2, 2, "(?, ?), (?, ?)"),
            (StoreKind::Sqlite, 0, 4, ""),
        ];
        for (kind, rows, columns, expected) in cases {
            assert_eq!(placeholders(kind, rows, columns), expected, "{rows} rows of {columns}");
        }
    }
}
