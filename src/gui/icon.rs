//! The window icon: `assets/icon/headroom-256.png`, rendered from `assets/icon/headroom.svg`
//! (the same artwork the desktop entry uses; `assets/icon/render.sh` regenerates the PNGs).

use egui::IconData;

const PNG: &[u8] = include_bytes!("../../assets/icon/headroom-256.png");

/// The decoded icon; an empty one (the platform's default icon) if the PNG could not be decoded,
/// which the test below rules out for the embedded file.
pub fn window_icon() -> IconData {
    eframe::icon_data::from_png_bytes(PNG).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_icon_decodes_to_256_square_rgba() {
        let icon = eframe::icon_data::from_png_bytes(super::PNG).expect("the icon PNG decodes");
        assert_eq!((icon.width, icon.height), (256, 256));
        assert_eq!(icon.rgba.len(), 256 * 256 * 4);
        // Not blank: the artwork has opaque pixels and transparent corners.
        assert!(icon.rgba.chunks(4).any(|p| p[3] == 255));
        assert_eq!(
            icon.rgba[3], 0,
            "top-left corner is transparent (rounded square)"
        );
    }
}
