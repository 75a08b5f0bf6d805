"""Training scripts for users (not installed with normjax): docs/ecosystem.md, "Examples"."""
