"""The organization's settings: its default locale and enabled locales (issue 15)."""
