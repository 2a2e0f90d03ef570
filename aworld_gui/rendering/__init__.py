"""What the page shows: HTML fragments, SVG charts, the theme, the glossary, English and Chinese."""
