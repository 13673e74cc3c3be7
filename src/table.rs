//! Text for people: columns padded to their widest cell, and instants as UTC timestamps. Shared
//! by the CLI's listings (`inspect.rs`) and the fleet report (`fleet/`).

/// An instant (unix seconds) as `2026-01-02T03:04:05Z`; empty when it is out of range.
pub fn timestamp(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    time::OffsetDateTime::from_unix_timestamp(unix).ok().and_then(|t| t.format(&format).ok()).unwrap_or_default()
}

/// Columns padded to their widest cell.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail, and every cell is a `String`.
    let _ = write_table(headers, rows.into_iter(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// [`table`] written to `out` a row at a time: the rows are made twice (once for the widths),
/// never held all at once.
pub fn write_table(
    headers: &[&str],
    rows: impl Iterator<Item = Vec<String>> + Clone,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows.clone() {
        for (width, cell) in widths.iter_mut().zip(&row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header_cells: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(header_cells).chain(rows) {
        let line: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        writeln!(out, "{}", line.join("  ").trim_end())?;
    }
    Ok(())
}
