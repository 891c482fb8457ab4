//! Charts of a run. A stub until the plotting module lands: it has the
//! final interface, and every call fails with "plotting not built yet".

use std::path::Path;

/// One line of a line chart.
pub struct Series {
    /// The legend's name of the line.
    pub name: String,
    /// Its points, (x, y).
    pub points: Vec<(f64, f64)>,
}

/// One bar of a grouped bar chart.
pub struct Bar {
    /// The group it stands in.
    pub group: String,
    /// Its series (its colour and legend entry).
    pub series: String,
    /// Its height.
    pub value: f64,
}

/// Line chart; format by extension (.svg or .png). Errors as String.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    let _ = (path, title, x_label, y_label, series);
    Err("plotting not built yet".to_string())
}

/// Grouped bar chart: one group per distinct `group`, one bar per `series` in it.
pub fn bars(path: &Path, title: &str, y_label: &str, bars: &[Bar]) -> Result<(), String> {
    let _ = (path, title, y_label, bars);
    Err("plotting not built yet".to_string())
}
