//! What surrounds a chart: the background and title (`frame`), the
//! legend to the right of the chart (`split_legend`, `Legend`), the
//! series' colours, the width of the value axis' labels, and the notice
//! drawn when there is no data.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scale::TickFormat;
use super::text::{draw_error, fit_text, text_style, text_width_px};
use super::{
    AXIS_LABEL_FONT_SIZE, LEGEND_FONT_SIZE, LEGEND_WIDTH_SHARE, MARGIN_PX, PALETTE, TEXT_MUTED,
    TICK_FONT_SIZE, TITLE_FONT_SIZE,
};

pub(super) fn series_colour(index: usize) -> RGBColor {
    match PALETTE.get(index) {
        Some(colour) => *colour,
        None => {
            let (r, g, b) = Palette99::pick(index).rgb();
            RGBColor(r, g, b)
        }
    }
}

/// Fills the background, draws the title and returns the area below it.
pub(super) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String> {
    root.fill(&WHITE).map_err(draw_error)?;
    let inner = root.margin(MARGIN_PX, MARGIN_PX, MARGIN_PX, MARGIN_PX);
    let style = text_style(TITLE_FONT_SIZE);
    let title = fit_text(&inner, title, &style, inner.dim_in_pixel().0)?;
    let body = inner.titled(&title, style).map_err(draw_error)?;
    // Room between the title and the top of the chart.
    Ok(body.margin(8, 0, 0, 0))
}

#[derive(Clone, Copy)]
pub(super) enum Swatch {
    Line,
    Block,
}

/// A legend to the right of the chart, so that it never hides data.
pub(super) struct Legend<DB: DrawingBackend> {
    pub(super) area: DrawingArea<DB, Shift>,
    /// The names shown, fitted to the legend's width, one row each.
    pub(super) names: Vec<String>,
    /// "… and N more", when there are more names than rows.
    pub(super) more: Option<String>,
}

const LEGEND_SWATCH_PX: u32 = 26;
const LEGEND_GAP_PX: u32 = 8;
const LEGEND_ROW_PX: u32 = LEGEND_FONT_SIZE * 8 / 5;

/// Splits `body` into the chart's area and a legend's just wide enough for
/// the names (none at all without names).
pub(super) fn split_legend<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    names: &[String],
) -> Result<(DrawingArea<DB, Shift>, Legend<DB>), String> {
    if names.is_empty() {
        let legend = Legend {
            area: body.clone(),
            names: Vec::new(),
            more: None,
        };
        return Ok((body.clone(), legend));
    }
    let style = text_style(LEGEND_FONT_SIZE);
    let (body_width_px, body_height_px) = body.dim_in_pixel();
    let rows = (body_height_px / LEGEND_ROW_PX).max(1) as usize;
    let (shown, more) = if names.len() > rows {
        let shown = rows - 1;
        (shown, Some(format!("… and {} more", names.len() - shown)))
    } else {
        (names.len(), None)
    };
    let decoration_px = LEGEND_SWATCH_PX + LEGEND_GAP_PX * 3;
    let text_width_px_max =
        ((f64::from(body_width_px) * LEGEND_WIDTH_SHARE) as u32).saturating_sub(decoration_px);
    let mut fitted = Vec::with_capacity(shown);
    let mut width_px = match &more {
        Some(more) => text_width_px(body, more, &style)? + LEGEND_GAP_PX * 2,
        None => 0,
    };
    for name in names.iter().take(shown) {
        let name = fit_text(body, name, &style, text_width_px_max)?;
        width_px = width_px.max(text_width_px(body, &name, &style)? + decoration_px);
        fitted.push(name);
    }
    let (chart, area) = body.split_horizontally(body_width_px.saturating_sub(width_px));
    let legend = Legend {
        area,
        names: fitted,
        more,
    };
    Ok((chart, legend))
}

impl<DB: DrawingBackend> Legend<DB> {
    pub(super) fn draw(&self, swatch: Swatch) -> Result<(), String> {
        let style = text_style(LEGEND_FONT_SIZE).pos(Pos::new(HPos::Left, VPos::Center));
        let x0 = LEGEND_GAP_PX as i32;
        let x1 = x0 + LEGEND_SWATCH_PX as i32;
        let text_x = x1 + LEGEND_GAP_PX as i32;
        let row_y = |row: usize| (LEGEND_ROW_PX as usize * row + LEGEND_ROW_PX as usize / 2) as i32;
        for (row, name) in self.names.iter().enumerate() {
            let y = row_y(row);
            let colour = series_colour(row);
            match swatch {
                Swatch::Line => {
                    self.area
                        .draw(&PathElement::new(
                            vec![(x0, y), (x1, y)],
                            colour.stroke_width(3),
                        ))
                        .map_err(draw_error)?;
                    self.area
                        .draw(&Circle::new(((x0 + x1) / 2, y), 3, colour.filled()))
                        .map_err(draw_error)?;
                }
                Swatch::Block => {
                    self.area
                        .draw(&Rectangle::new([(x0, y - 7), (x1, y + 7)], colour.filled()))
                        .map_err(draw_error)?;
                }
            }
            self.area
                .draw_text(name, &style, (text_x, y))
                .map_err(draw_error)?;
        }
        if let Some(more) = &self.more {
            let style = style.color(&TEXT_MUTED);
            self.area
                .draw_text(more, &style, (x0, row_y(self.names.len())))
                .map_err(draw_error)?;
        }
        Ok(())
    }
}

/// The width of the y axis' label area: the widest tick label, tick marks,
/// and the rotated axis label.
pub(super) fn y_label_area_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    ticks: &TickFormat,
    (lo, hi): (f64, f64),
) -> Result<u32, String> {
    let style = text_style(TICK_FONT_SIZE);
    let mut widest_px = 0;
    for v in [lo, hi, (lo + hi) / 2.0, lo + (hi - lo) * 0.9] {
        widest_px = widest_px.max(text_width_px(area, &ticks.format(v), &style)?);
    }
    Ok(widest_px + 14 + AXIS_LABEL_FONT_SIZE * 3 / 2)
}

pub(super) fn draw_no_data<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    (x_lo, x_hi): (f64, f64),
    (y_lo, y_hi): (f64, f64),
) -> Result<(), String> {
    let style = text_style(AXIS_LABEL_FONT_SIZE)
        .color(&TEXT_MUTED)
        .pos(Pos::new(HPos::Center, VPos::Center));
    let centre = ((x_lo + x_hi) / 2.0, (y_lo + y_hi) / 2.0);
    chart
        .draw_series(std::iter::once(Text::new("no data", centre, style)))
        .map_err(draw_error)?;
    Ok(())
}
