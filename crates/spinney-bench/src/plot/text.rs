//! Text: measured with the bundled font, drawn with it in a PNG and left
//! to the viewer in an SVG (`Typeset`, a backend wrapping plotters'), and
//! fitted to a width by cutting out its middle.

use ab_glyph::{Font, FontRef, Glyph, PxScale, ScaleFont};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
// BackendStyle is named by path: in scope, its stroke_width would clash with
// plotters' Color::stroke_width.
use plotters_backend::{BackendColor, BackendCoord, BackendTextStyle, DrawingErrorKind};

use super::{EM_PER_SIZE_DIVISOR, FONT_FAMILY, TEXT_CHARS_MAX};

/// Who draws the glyphs of a text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum TextDrawing {
    /// The file keeps the text as text (SVG), for its viewer to draw.
    Viewer,
    /// The text is drawn here, pixel by pixel (bitmaps).
    Glyphs,
}

/// A plotters backend that measures text with the bundled font and, for
/// bitmaps, draws it too; everything else passes through to `inner`.
///
/// Text is placed as plotters-svg places it, so that an SVG and a PNG of the
/// same chart agree: the em is the style's size over [`EM_PER_SIZE_DIVISOR`];
/// the anchor's horizontal part picks the start, middle or end of the advance
/// width; its vertical part puts the baseline 0.76 em below the anchor (top),
/// half an x-height below it (centre) or half an x-height above it (bottom).
/// The rotation turns the text about the anchor.
pub(super) struct Typeset<B> {
    pub(super) inner: B,
    pub(super) font: FontRef<'static>,
    pub(super) drawing: TextDrawing,
}

/// A line of text laid out on a baseline at y = 0, starting at x = 0.
pub(super) struct TextLayout {
    pub(super) glyphs: Vec<Glyph>,
    pub(super) width_px: f32,
    pub(super) height_px: f32,
    pub(super) em_px: f32,
}

impl<B: DrawingBackend> Typeset<B> {
    pub(super) fn new(inner: B, font: FontRef<'static>, drawing: TextDrawing) -> Self {
        Self {
            inner,
            font,
            drawing,
        }
    }

    pub(super) fn layout(&self, text: &str, size: f64) -> TextLayout {
        let em_px = (size / EM_PER_SIZE_DIVISOR) as f32;
        let units_per_em = self
            .font
            .units_per_em()
            .unwrap_or_else(|| self.font.height_unscaled());
        // ab_glyph scales by the height from descent to ascent, not by the em.
        let scale = PxScale::from(em_px * self.font.height_unscaled() / units_per_em);
        let scaled = self.font.as_scaled(scale);
        let mut glyphs = Vec::with_capacity(text.len());
        let mut caret = 0.0_f32;
        let mut previous = None;
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(previous) = previous {
                caret += scaled.kern(previous, id);
            }
            glyphs.push(id.with_scale_and_position(scale, ab_glyph::point(caret, 0.0)));
            caret += scaled.h_advance(id);
            previous = Some(id);
        }
        TextLayout {
            glyphs,
            width_px: caret,
            height_px: scaled.height(),
            em_px,
        }
    }

    /// The x-height as a share of the em ("ex" in CSS).
    pub(super) fn x_height_em(&self) -> f32 {
        let units_per_em = self.font.units_per_em().unwrap_or(1.0);
        match self.font.outline(self.font.glyph_id('x')) {
            // ab_glyph's unscaled bounds hold the top (font y_max) in min.y.
            Some(outline) => (outline.bounds.max.y - outline.bounds.min.y).abs() / units_per_em,
            None => 0.5,
        }
    }

    fn draw_glyphs<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        (anchor_x, anchor_y): BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let colour = style.color();
        if colour.alpha == 0.0 {
            return Ok(());
        }
        let layout = self.layout(text, style.size());
        let anchor = style.anchor();
        let dx = match anchor.h_pos {
            HPos::Left => 0.0,
            HPos::Center => -layout.width_px / 2.0,
            HPos::Right => -layout.width_px,
        };
        let half_ex = self.x_height_em() * layout.em_px / 2.0;
        let baseline = match anchor.v_pos {
            VPos::Top => 0.76 * layout.em_px,
            VPos::Center => half_ex,
            VPos::Bottom => -half_ex,
        };
        let transform = style.transform();
        for glyph in layout.glyphs {
            // A space has no outline; a character the font lacks draws as
            // its empty box.
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let bounds = outline.px_bounds();
            let inner = &mut self.inner;
            let mut result = Ok(());
            outline.draw(|x, y, coverage| {
                if result.is_err() || coverage <= 0.0 {
                    return;
                }
                let text_x = (bounds.min.x + x as f32 + dx).round() as i32;
                let text_y = (bounds.min.y + y as f32 + baseline).round() as i32;
                let (x, y) = transform.transform(text_x, text_y);
                let pixel = BackendColor {
                    alpha: colour.alpha * f64::from(coverage.min(1.0)),
                    rgb: colour.rgb,
                };
                result = inner.draw_pixel((anchor_x + x, anchor_y + y), pixel);
            });
            result?;
        }
        Ok(())
    }
}

impl<B: DrawingBackend> DrawingBackend for Typeset<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        colour: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, colour)
    }

    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        centre: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(centre, radius, style, fill)
    }

    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vertices: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vertices, style)
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        anchor: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        match self.drawing {
            TextDrawing::Viewer => self.inner.draw_text(text, style, anchor),
            TextDrawing::Glyphs => self.draw_glyphs(text, style, anchor),
        }
    }

    fn estimate_text_size<S: BackendTextStyle>(
        &self,
        text: &str,
        style: &S,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let layout = self.layout(text, style.size());
        Ok((
            layout.width_px.ceil() as u32,
            layout.height_px.ceil() as u32,
        ))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

pub(super) fn draw_error(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub(super) fn text_style(size: u32) -> TextStyle<'static> {
    (FONT_FAMILY, size).into_font().color(&BLACK)
}

/// `text` without control characters, with its middle cut out and replaced
/// by "…" until it is at most `width_px_max` wide (or is "…" alone). The
/// middle goes because benchmark names tend to share a start and differ at
/// the end ("fill-random-4k-lsm", "fill-random-4k-btree").
pub(super) fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
    width_px_max: u32,
) -> Result<String, String> {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_control()).collect();
    let whole: String = chars.iter().collect();
    if chars.len() <= TEXT_CHARS_MAX && text_width_px(area, &whole, style)? <= width_px_max {
        return Ok(whole);
    }
    let mut kept = chars.len().min(TEXT_CHARS_MAX);
    loop {
        let head: String = chars.iter().take(kept.div_ceil(2)).collect();
        let tail: String = chars.iter().skip(chars.len() - kept / 2).collect();
        let candidate = format!("{}…{}", head.trim_end(), tail.trim_start());
        if kept == 0 || text_width_px(area, &candidate, style)? <= width_px_max {
            return Ok(candidate);
        }
        kept -= 1;
    }
}

pub(super) fn text_width_px<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
) -> Result<u32, String> {
    Ok(area.estimate_text_size(text, style).map_err(draw_error)?.0)
}
